"""The paused-follower scenario on real processes
(tests/node/witness_handover.py): two
nodes answer ApiVersions exactly as a real Kafka 4.0 controller does (started
through :mod:`tests.node.kafka_played`, whose table
tests/node/test_kafka_played.py checks against a real answer from
``fixtures/wire/``) and lead as Kafka controllers do;
node 3 is a kraft voter with default settings, a witness.

Pause the follower (SIGSTOP), keep committing with the witness, kill -9 the
leader, resume the follower: it is behind the witness, so only a hand-over
epoch can elect it (kraft/raft/handover.py). The follower leads, the witness
led at most once per round, briefly, and appended nothing, and no
acknowledged record is lost. No timing is asserted: the figures are
reported (``-s`` shows them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.node.witness_handover import KAFKA, run_witness_handover
from tests.ports import free_ports


@pytest.mark.slow
async def test_a_behind_kafka_follower_is_handed_the_log_and_leads(tmp_path: Path) -> None:
    result = await run_witness_handover(tmp_path, print, rounds=2, pause_s=3.0, ports=free_ports(4))
    print(result)
    for round_ in result["rounds"]:
        # The resumed follower leads; the witness led at most once to get it there.
        assert round_["resumed"] in KAFKA and round_["witness_led"] <= 1, round_
    # The follower was behind in at least one round, so the witness handed over.
    assert any(r["handover_ms"] is not None for r in result["rounds"]), result
    assert result["witness_led"] <= len(result["rounds"])
    assert result["final_leader"] in KAFKA
    assert result["witness_appended"] == 0
    assert result["acknowledged"] > 50 and result["lost"] == 0, result
