"""KIP-853 voter changes at the leader: the admission rules of Kafka's
``AddVoterHandler``, ``RemoveVoterHandler`` and ``UpdateVoterHandler``, and
the one change that may be in flight.

Every change of the voter set is one ``VotersRecord`` appended by the
leader; replicas use a voter set as soon as it is in their log. Safety rests
on three rules, checked here in Kafka's order before anything is written:

1. one change at a time: no other add or remove is pending
   (REQUEST_TIMED_OUT);
2. the leader has committed a record of its own epoch, so the voter set it
   works from is the one every future leader will have
   (REQUEST_TIMED_OUT: "waiting for leader to establish HWM");
3. the latest ``VotersRecord`` is committed (REQUEST_TIMED_OUT).

Then ``kraft.version`` must be at least 1 (UNSUPPORTED_VERSION), and the
change itself must make sense: an added id must be new (DUPLICATE_VOTER),
a removed or updated key must be a voter (VOTER_NOT_FOUND). The last voter
is never removed (INVALID_REQUEST: Kafka would fail building an empty set).

An add then asks the new voter for its supported ``kraft.version`` range
(ApiVersions) and checks it has recently caught up with the leader's log
end before the record is appended; the answer waits until the record is
committed under the new voter set (Kafka answers from
``highWatermarkUpdated``), or at most ``request.timeout.ms``.
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Callable
from typing import Literal, NamedTuple

from kraft.raft.errors import Errors
from kraft.raft.events import InboundRequest, RaftResponse
from kraft.raft.voters import VoterNode

__all__ = ["Answer", "PendingVoterChange", "Refusal", "admission_refusal"]

#: An RPC's answer to a voter change: error code and message -> its response.
Answer = Callable[[Errors, str | None], RaftResponse]


class Refusal(NamedTuple):
    """Why a voter change is refused: Kafka's error code and message."""

    error: Errors
    message: str | None


@dataclass(slots=True)
class PendingVoterChange:
    """The add or remove in flight at the leader (Kafka's
    ``AddVoterHandlerState`` / ``RemoveVoterHandlerState``)."""

    kind: Literal["add", "remove"]
    #: The AddRaftVoter/RemoveRaftVoter request to answer.
    request: InboundRequest
    #: Its RPC's answer: error code and message -> the response.
    answer: Answer
    #: The voter added (its supported versions are filled in from ApiVersions)
    #: or removed.
    voter: VoterNode
    #: Answer REQUEST_TIMED_OUT at this time if still pending.
    deadline_ms: int
    ack_when_committed: bool = True
    #: The ApiVersions request sent to the new voter, while awaited.
    api_versions_correlation: int | None = None
    #: Offset of the appended VotersRecord; committed once the high
    #: watermark passes it.
    last_offset: int | None = None

    def describe(self) -> str:
        return f"{self.kind} voter {self.voter.key}"


def admission_refusal(
    *,
    pending: PendingVoterChange | None,
    high_watermark: int | None,
    kraft_version: int,
    voters_offset: int | None,
    action: str,
) -> Refusal | None:
    """Rules 1-3 and the kraft.version check, in Kafka's order; ``None`` if
    a voter change may start now. ``action`` names it in messages ("adding
    voter", "removing voter", "updating voter")."""
    if pending is not None:
        return Refusal(
            Errors.REQUEST_TIMED_OUT,
            f"Request timed out waiting for leader to handle previous voter change ({pending.describe()})",
        )
    if high_watermark is None:
        return Refusal(
            Errors.REQUEST_TIMED_OUT,
            "Request timed out waiting for leader to establish HWM and fence previous voter changes",
        )
    if kraft_version < 1:
        return Refusal(
            Errors.UNSUPPORTED_VERSION,
            f"Cluster doesn't support {action} because the kraft.version feature is {kraft_version}",
        )
    if voters_offset is None or voters_offset >= high_watermark:
        at = "none" if voters_offset is None else str(voters_offset)
        return Refusal(
            Errors.REQUEST_TIMED_OUT,
            f"Request timed out waiting for voters to commit the latest voter change at {at} "
            f"with HWM {high_watermark}",
        )
    return None
