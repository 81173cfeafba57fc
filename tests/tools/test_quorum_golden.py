"""``kraft quorum describe`` against the real ``kafka-metadata-quorum.sh``
(Kafka 4.0.0) outputs in ``fixtures/real-tool-outputs/kafka-4.0.0-cli.jsonl``,
byte for byte with ``--kafka-version 4.0``; and each as Kafka 4.1.0 prints
the same quorum (no recording of 4.1.0 against a live cluster exists: its
``Node.toString`` leaves out the ``directoryId`` of a replica without one,
the one change of ``MetadataQuorumCommand``'s output from 4.0 to 4.1).

Every successful ``describe --status`` and ``describe --replication
[--human-readable]`` record applies (dynamic and static quorums, with
``--bootstrap-controller`` and ``--bootstrap-server``): the quorum each one
printed is rebuilt from the output (ids, directory ids -- ``null`` for none --,
endpoints, offsets, times, the lag Kafka computed) and handed to our
formatters, whose text must equal Kafka's. Kafka's code:
``MetadataQuorumCommand.handleDescribeStatus``, ``handleDescribeReplication``
and ``Node.toString`` (4.0: ``"directoryId": null`` for ``Uuid.ZERO_UUID``).
Not applicable: ``--help`` and argparse usage errors (ours are click's, exit
status 2), the unreachable-controller run (Java log lines), and
add-/remove-controller (they print after changing a live quorum)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from kraft.messages.json_form import uuid_from_kafka
from kraft.admin_client.admin import QuorumInfo, ReplicaInfo
from kraft.kafka_release import LATEST, RELEASES
from kraft.tools.quorum import format_replication, format_status
from tests import golden

ZERO = uuid.UUID(int=0)
NOW = 1_795_572_480_000


def records() -> list[dict[str, Any]]:
    return golden.selected("cli@4.0.0", replayed)


@golden.replays("cli@4.0.0", "tests/tools/test_quorum_golden.py")
def replayed(record: dict[str, Any]) -> bool:
    args = record["args"]
    return (record["tool"] == "kafka-metadata-quorum.sh" and record["rc"] == 0 and isinstance(args, list)
            and "describe" in args)


def _uuid(text: str | None) -> uuid.UUID:
    return ZERO if text is None else uuid_from_kafka(text)


def _endpoint(text: str) -> tuple[str, str, int]:
    name, _, rest = text.partition("://")
    host, _, port = rest.rpartition(":")
    return name, host.strip("[]"), int(port)


def status_info(stdout: str) -> tuple[str, QuorumInfo]:
    fields: dict[str, str] = {}
    for line in stdout.splitlines():
        name, _, value = line.partition(":")
        fields[name] = value.strip()
    leader_id, hwm = int(fields["LeaderId"]), int(fields["HighWatermark"])
    lag, lag_time = int(fields["MaxFollowerLag"]), int(fields["MaxFollowerLagTimeMs"])
    voters_json = json.loads(fields["CurrentVoters"])
    observers_json = json.loads(fields["CurrentObservers"])
    t = NOW
    # Every voter at the leader's end, caught up now -- except the one Kafka
    # reported as lagging most: Stream.min takes the first of equal ends.
    lagging = next(v["id"] for v in voters_json if v["id"] != leader_id) if lag else voters_json[0]["id"]
    voters = []
    for v in voters_json:
        behind = v["id"] == lagging and v["id"] != leader_id
        voters.append(ReplicaInfo(v["id"], _uuid(v["directoryId"]), hwm - (lag if behind else 0), t,
                                  t - lag_time if behind else t))
    observers = tuple(ReplicaInfo(o["id"], _uuid(o["directoryId"]), hwm, t, t) for o in observers_json)
    nodes = {v["id"]: tuple(_endpoint(e) for e in v["endpoints"]) for v in voters_json if v.get("endpoints")}
    return fields["ClusterId"], QuorumInfo(leader_id, int(fields["LeaderEpoch"]), hwm, tuple(voters), observers,
                                           nodes)


def _time(cell: str) -> int | None:
    cell = cell.strip()
    if cell == "-1":
        return None
    if cell.endswith(" ms ago"):
        return NOW - int(cell[: -len(" ms ago")])
    return int(cell)


def replication_info(stdout: str) -> QuorumInfo:
    rows = [line.split("\t")[:-1] for line in stdout.splitlines()[1:]]
    replicas = [(ReplicaInfo(int(r[0]), _uuid(r[1].strip()), int(r[2]), _time(r[4]), _time(r[5])), r[6].strip())
                for r in rows]
    voters = tuple(r for r, status in replicas if status in ("Leader", "Follower"))
    observers = tuple(r for r, status in replicas if status == "Observer")
    leader = next(r for r, status in replicas if status == "Leader")
    return QuorumInfo(leader.replica_id, 1, leader.log_end_offset, voters, observers, {})


def test_every_applicable_real_output_is_ours_byte_for_byte() -> None:
    compared = {"--status": 0, "--replication": 0, "--human-readable": 0, "null": 0}
    for record in records():
        args, stdout = record["args"], record["stdout"]
        if "--status" in args:
            cluster_id, info = status_info(stdout)
            assert format_status(cluster_id, info, RELEASES["4.0.0"]) == stdout, record["context"]
            # Kafka 4.1's MetadataQuorumCommand.Node.toString: no "directoryId" key for Uuid.ZERO_UUID.
            assert format_status(cluster_id, info, LATEST) == stdout.replace('"directoryId": null, ', "") \
                .replace(', "directoryId": null', ""), record["context"]
            compared["--status"] += 1
            compared["null"] += '"directoryId": null' in stdout
        else:
            human = "--human-readable" in args
            info = replication_info(stdout)
            assert format_replication(info, human_readable=human, now_ms=lambda: NOW) == stdout, record["context"]
            compared["--human-readable" if human else "--replication"] += 1
    # What the fixture holds: 7 status runs (3 of static quorums with
    # "directoryId": null), 3 plain and 2 human-readable replication tables.
    assert compared == {"--status": 7, "--replication": 3, "--human-readable": 2, "null": 3}, compared


def test_the_witness_line_follows_kafkas_and_only_when_there_is_a_witness() -> None:
    from kraft.raft.rpcs.describe_quorum_rpc import WITNESS_NOTE
    from kraft.tools.quorum_witness import format_witnesses, parse_witness_note

    assert format_witnesses({}) == ""
    assert format_witnesses({3: "kraft.witness=true", 1: 'a "quoted" reason'}) == (
        'Witnesses:              [{"id": 1, "reason": "a \\"quoted\\" reason"}, {"id": 3, "reason": '
        '"kraft.witness=true"}]\n')
    kafka_message = "For requests intended only for the leader, this error indicates ..."
    assert parse_witness_note(kafka_message) is None
    assert parse_witness_note(kafka_message + WITNESS_NOTE + "kraft.witness=true)") == "kraft.witness=true"
