"""Kafka record batches for the control records the raft core writes.

The core describes a control batch with the dataclasses of
:mod:`kraft.raft.logops` (LeaderChange, KRaftVersion, Voters); the raft driver writes
it to the metadata log as Kafka does: one control batch whose records carry
the generated ``LeaderChangeMessage``, ``KRaftVersionRecord`` and
``VotersRecord`` messages at data version 0 (``ControlRecordUtils``'s
current versions), keyed by their control type.
"""

from __future__ import annotations

from typing import Any

from kraft.raft.logops import Batch, ControlRecord, KRaftVersionControl, LeaderChangeMessage, VotersControl
from kraft.records.control import build_control_batch
from kraft.records.kraft_control import kraft_version_record_of, voters_record_of

__all__ = ["control_message", "encode_control_batch"]


def control_message(control: ControlRecord) -> Any:
    """The generated message for one of the core's control records."""
    match control:
        case LeaderChangeMessage():
            from kraft.messages.generated import leader_change_message as lcm

            return lcm.LeaderChangeMessage(
                version=0,
                leader_id=control.leader_id,
                voters=[lcm.Voter(voter_id=v) for v in control.voters],
                granting_voters=[lcm.Voter(voter_id=v) for v in control.granting_voters],
            )
        case KRaftVersionControl():
            return kraft_version_record_of(control.kraft_version)
        case VotersControl():
            return voters_record_of(control.voters)
    raise TypeError(f"not a control record: {control!r}")


def encode_control_batch(batch: Batch) -> bytes:
    """The Kafka control batch for ``batch`` (which must hold control records)."""
    if not batch.controls:
        raise ValueError("not a control batch")
    return build_control_batch(
        [control_message(c) for c in batch.controls],
        base_offset=batch.base_offset,
        partition_leader_epoch=batch.epoch,
        timestamp=batch.append_time_ms,
    )
