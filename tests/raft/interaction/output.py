"""How an interaction transcript prints what the cluster did: one line per
message (``1->2 Vote epoch=2 last=3:1``), a Ready's actions in the order the
shell executes them, and a replica's status.

Messages are shortened to what a reader of KIP-595 looks at (epochs, log
positions, grants, records as ``BASE-LAST@EPOCH``); a message without a
short form falls back to the single-replica transcripts' full form
(:func:`tests.raft.transcripts.message_text`)."""

from __future__ import annotations

from kraft.raft.ready import Ready
from kraft.raft.errors import Errors
from kraft.raft.events import RaftRequest, RaftResponse, RequestFailed
from kraft.raft.rpcs import (
    BeginQuorumEpochRequest, BeginQuorumEpochResponse, EndQuorumEpochRequest, EndQuorumEpochResponse,
    FetchRequest, FetchResponse, VoteRequest, VoteResponse,
)
from kraft.raft.roles import Follower, Leader
from kraft.records.view import OffsetAndEpoch
from kraft.sim.memlog import MemBatch, MemLog, decode_batches
from kraft.sim.replica import SimNode
from kraft.sim.sim_config import ADMIN_ID
from tests.raft.transcripts import log_op_text, message_text

__all__ = ["after_send_lines", "batches_text", "message_line", "ready_is_empty", "ready_lines", "status_line"]


def batches_text(batches: list[MemBatch] | tuple[MemBatch, ...]) -> str:
    """Record batches as ``[BASE-LAST@EPOCH,...]``, control batches marked ``c``."""
    return "[" + ",".join(f"{b.base_offset}-{b.end_offset - 1}@{b.epoch}{'c' if b.control else ''}"
                          for b in batches) + "]"


def _position(offset: int, epoch: int) -> str:
    return f"{offset}:{epoch}"


def _quorum_answer(kind: str, response: RaftResponse, epoch: int, leader: int) -> list[str]:
    parts = [kind, f"epoch={epoch}"]
    if leader >= 0:
        parts.append(f"leader={leader}")
    for error in (getattr(response, "error", Errors.NONE), getattr(response, "partition_error", Errors.NONE)):
        if error != Errors.NONE:
            parts.append(error.name)
    return parts


def _request_text(request: RaftRequest) -> str:
    match request:
        case VoteRequest(pre_vote=pre_vote):
            kind = "PreVote" if pre_vote else "Vote"
            return f"{kind} epoch={request.candidate_epoch} last={_position(request.last_offset, request.last_offset_epoch)}"
        case BeginQuorumEpochRequest():
            return f"BeginQuorumEpoch epoch={request.leader_epoch}"
        case EndQuorumEpochRequest():
            preferred = ",".join(str(k.id) for k in request.preferred_candidates)
            return f"EndQuorumEpoch epoch={request.leader_epoch} preferred=[{preferred}]"
        case FetchRequest():
            text = f"Fetch epoch={request.current_leader_epoch} at={_position(request.fetch_offset, request.last_fetched_epoch)}"
            return text if request.high_watermark < 0 else f"{text} hw={request.high_watermark}"
        case _:
            return message_text(request)


def _response_text(response: RaftResponse, pre_vote: bool) -> str:
    match response:
        case VoteResponse():
            kind = "PreVoteResp" if pre_vote else "VoteResp"
            parts = _quorum_answer(kind, response, response.leader_epoch, response.leader_id)
            parts.insert(1, "granted" if response.vote_granted else "rejected")
        case BeginQuorumEpochResponse() | EndQuorumEpochResponse():
            kind = type(response).__name__.removesuffix("Response") + "Resp"
            parts = _quorum_answer(kind, response, response.leader_epoch, response.leader_id)
        case FetchResponse():
            parts = _quorum_answer("FetchResp", response, response.leader_epoch, response.leader_id)
            if response.high_watermark >= 0:
                parts.append(f"hw={response.high_watermark}")
            if response.records:
                parts.append("records=" + batches_text(decode_batches(response.records)))
            if response.diverging_epoch is not None:
                parts.append(f"diverging={_offset_and_epoch(response.diverging_epoch)}")
            if response.snapshot_id is not None:
                parts.append(f"snapshot={_offset_and_epoch(response.snapshot_id)}")
        case _:
            return message_text(response)
    return " ".join(parts)


def _offset_and_epoch(value: OffsetAndEpoch) -> str:
    return _position(value.offset, value.epoch)


def message_line(source: int, destination: int, message: RaftRequest | RaftResponse | RequestFailed,
                 *, pre_vote: bool = False) -> str:
    """``SOURCE->DESTINATION KIND fields``; ``pre_vote``: a VoteResponse answers a pre-vote
    (the response does not say so itself)."""
    if isinstance(message, RequestFailed):
        reason = f" ({message.reason})" if message.reason else ""
        return f"{destination}->{source} failed{reason}"
    route = f"{_name(source)}->{_name(destination)}"
    if isinstance(message, RaftRequest):
        return f"{route} {_request_text(message)}"
    return f"{route} {_response_text(message, pre_vote)}"


def _name(node_id: int) -> str:
    return "admin" if node_id == ADMIN_ID else str(node_id)


def ready_is_empty(ready: Ready, committed_before: int | None) -> bool:
    """Nothing for the shell to do and nothing to report."""
    return not (
        ready.persist is not None or ready.log or ready.send or ready.role_changes or ready.violations
        or ready.leader_change is not None or ready.shutdown is not None
        or (ready.committed is not None and ready.committed != committed_before)
    )


def ready_lines(ready: Ready) -> list[str]:
    """The Ready's state changes, in execution order (its messages are printed as sent)."""
    out: list[str] = []
    if ready.persist is not None:
        state = ready.persist
        leader = "" if state.leader_id is None else f" leader={state.leader_id}"
        voted = "" if state.voted_key is None else f" voted={state.voted_key.id}"
        out.append(f"persist: epoch={state.epoch}{leader}{voted}")
    out.extend(log_op_text(op) for op in ready.log)
    return out


def after_send_lines(ready: Ready, committed_before: int | None) -> list[str]:
    """What a Ready reports after its messages: commit, leader change, role changes."""
    out: list[str] = []
    if ready.committed is not None and ready.committed != committed_before:
        out.append(f"commit: {ready.committed}")
    if ready.leader_change is not None and ready.leader_change.leader_id is not None:
        # (what the listeners hear; "no leader" is already in the role line)
        change = ready.leader_change
        out.append(f"leader-change: leader={change.leader_id} epoch={change.epoch}")
    for role in ready.role_changes:
        leader = "" if role.leader_id is None else f" leader={role.leader_id}"
        out.append(f"role: {role.previous} -> {role.role} epoch={role.epoch}{leader} ({role.reason})")
    out.extend(f"violation: {v.description}" for v in ready.violations)
    if ready.shutdown is not None:
        out.append(f"shutdown: {'completed' if ready.shutdown.completed else 'timed out'}")
    return out


def status_line(node: SimNode) -> str:
    """``ID: ROLE epoch=E leader=L hw=H voters=[...] log=[...]`` (``ID: down`` for a crashed replica)."""
    core = node.core
    if core is None:
        return f"{node.node_id}: down"
    role = core.role
    leader = core.leader_id
    parts = [f"{node.node_id}: {type(role).__name__} epoch={core.epoch}"]
    if leader is not None:
        parts.append(f"leader={leader}")
    voted = node.durable_election.voted_key if node.durable_election is not None else None
    if voted is not None and not isinstance(role, Leader | Follower):
        parts.append(f"voted={voted.id}")
    hw = core.high_watermark
    parts.append(f"hw={'-' if hw is None else hw}")
    parts.append("voters=[" + ",".join(str(i) for i in sorted(k.id for k in core.voters.voter_keys)) + "]")
    log = node.log
    batches = log.batches if isinstance(log, MemLog) else ()
    parts.append(f"log={batches_text(batches)}")
    return " ".join(parts)
