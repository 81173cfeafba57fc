"""Interaction transcripts: whole clusters of sans-IO cores, driven one
command at a time, in etcd raft's ``testdata/*.txt`` style.

A transcript (``tests/raft/interaction/testdata/*.txt``) has the format of
the single-replica transcripts (:mod:`tests.raft.transcripts`): a command
line, ``----``, the output it must print, a blank line; ``#`` comments
belong to the command below them (cite the spec there: "KIP-595: ...").
``pytest tests/raft/test_interaction.py --rewrite-transcripts`` writes the
observed output back (review the diff). Each command is one small handler
in :mod:`tests.raft.interaction.handlers`; arguments are bare node ids and
``key=value``::

    add-nodes N [voters=1,2,3] [dynamic] [legacy=ID,..] [election-timeout-ms=..]
                                 # N replicas (static quorum, or KIP-853), started
    campaign ID                  # its election (fetch) timer fires; its Ready
    tick ms=N [ID ...]           # virtual time passes on those clocks
    process-ready [ID ...]       # poll, then persist, log, send (Ready order)
    deliver-msgs [from=ID] [to=ID] [drop]
                                 # step the messages in flight into the cores
    stabilise [ID ...]           # process-ready + deliver-msgs until quiet
    partition ID ...  /  heal    # cut those replicas off the rest / undo
    propose ID [count=N]         # the leader appends N records
    resign ID                    # the leader steps down (EndQuorumEpoch)
    crash ID  /  restart ID      # lose memory and unflushed writes / start again
    status [ID ...]              # role, epoch, leader, high watermark, log
    add-voter ID via=ID  /  remove-voter ID via=ID
                                 # an admin's AddRaftVoter / RemoveRaftVoter

The output names each replica's Ready (``> 1 handling Ready``) and the
messages it steps (``> 2 receiving messages``), one line per message
(``1->2 Vote epoch=2 last=3:1``; answers ``VoteResp``, ``FetchResp`` ...),
then what the Ready did: ``persist:``, ``log:``, the messages it sent,
``commit:``, ``leader-change:``, ``role:`` (with the core's reason). The
cluster is the simulation's (:mod:`tests.raft.interaction.env`): seeded,
virtual time, its safety invariants checked after every command.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path

from tests.raft.interaction.env import InteractionEnv
from tests.raft.interaction.handlers import (
    add_nodes, campaign, crash, deliver_msgs, partition, process_ready, propose, resign, stabilise, status, tick, voters,
)
from tests.raft.transcripts import Args, Step, TranscriptError, parse

__all__ = ["COMMANDS", "run_interaction"]

Handler = Callable[[InteractionEnv, Args], list[str]]

COMMANDS: dict[str, Handler] = {
    "add-nodes": add_nodes.handle,
    "campaign": campaign.handle,
    "tick": tick.handle,
    "process-ready": process_ready.handle,
    "deliver-msgs": deliver_msgs.handle,
    "stabilise": stabilise.handle,
    "partition": partition.handle,
    "heal": partition.heal,
    "propose": propose.handle,
    "resign": resign.handle,
    "crash": crash.crash,
    "restart": crash.restart,
    "status": status.handle,
    "add-voter": voters.add_voter,
    "remove-voter": voters.remove_voter,
}


def run_command(env: InteractionEnv, command: str) -> list[str]:
    name, *tokens = shlex.split(command)
    handler = COMMANDS.get(name)
    if handler is None:
        raise TranscriptError(f"unknown command {name!r}")
    args = Args.of(tokens)
    out = handler(env, args)
    args.done()
    env.check_invariants()
    return out


def run_interaction(path: Path, seed: int = 1) -> tuple[list[Step], list[Step]]:
    """The file's steps and the same steps with what the cluster really printed."""
    steps = parse(path.read_text())
    env = InteractionEnv(seed)
    observed: list[Step] = []
    for step in steps:
        try:
            out = run_command(env, step.command)
        except TranscriptError as e:
            raise TranscriptError(f"{path.name}:{step.line}: {step.command}: {e}") from None
        observed.append(Step(step.line, step.command, out or ["ok"], step.comments))
    return steps, observed
