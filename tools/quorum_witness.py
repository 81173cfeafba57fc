"""``kraft quorum describe --status``: which voters are kraft witnesses, and why.

A kraft witness (kraft/raft/witness_policy.py) answers DescribeQuorum, as every
non-leader does, with NOT_LEADER_OR_FOLLOWER and Kafka's message, to which
it appends ``" (kraft witness: <reason>)"``; a witness leading a hand-over
epoch (kraft/raft/handover.py) adds the same note to its leader's answer.
After Kafka's lines the tool asks every voter (at the listeners
DescribeQuorum v2 gave), all at once and briefly (a voter that does not answer within
:data:`WITNESS_PROBE_MS` is left out), and adds one line when some voter is
a witness::

    Witnesses:              [{"id": 3, "reason": "voters 1, 2 advertise Kafka controller APIs ..."}]

Against a quorum without witnesses (any Kafka quorum) nothing is added: the
output stays Kafka's, byte for byte.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING

import trio

if TYPE_CHECKING:
    from kraft.admin_client.admin import AdminSession
    from kraft.raft.rpcs.describe_quorum_rpc import QuorumInfo

__all__ = ["WITNESS_PROBE_MS", "format_witnesses", "parse_witness_note", "witness_reasons"]

#: How long the tool waits for the voters' answers (all asked at once).
WITNESS_PROBE_MS = 1500


def parse_witness_note(message: str | None) -> str | None:
    """The reason in a witness's DescribeQuorum error message, or None."""
    from kraft.raft.rpcs.describe_quorum_rpc import WITNESS_NOTE

    if not message or WITNESS_NOTE not in message:
        return None
    return message.split(WITNESS_NOTE, 1)[1].removesuffix(")")


def format_witnesses(reasons: Mapping[int, str]) -> str:
    """The ``Witnesses:`` line (Kafka's alignment), empty without witnesses."""
    if not reasons:
        return ""
    items = ", ".join(json.dumps({"id": i, "reason": reasons[i]}) for i in sorted(reasons))
    return f"Witnesses:              [{items}]\n"


async def witness_reasons(session: AdminSession, info: QuorumInfo) -> dict[int, str]:
    """Ask every voter of ``info`` through ``session`` (the leader too: a
    witness may be leading a hand-over epoch): voter id -> why it is a
    witness."""
    from kraft.messages.errors import KraftProtocolError
    from kraft.wire.network_client import PeerClientError

    reasons: dict[int, str] = {}

    async def ask(voter_id: int, address: tuple[str, int]) -> None:
        try:
            version, answer = await session.quorum_answer(address)
        except (PeerClientError, KraftProtocolError):
            return  # not a witness we can tell about: Kafka's lines stand alone
        if version < 2 or answer.partition_error_code is None:
            return
        reason = parse_witness_note(answer.partition_error_message)
        if reason is not None:
            reasons[voter_id] = reason

    with trio.move_on_after(WITNESS_PROBE_MS / 1000):
        async with trio.open_nursery() as nursery:
            for voter in info.voters:
                endpoints = info.nodes.get(voter.replica_id, ())
                if endpoints:
                    _, host, port = endpoints[0]
                    nursery.start_soon(ask, voter.replica_id, (host, port))
    return reasons
