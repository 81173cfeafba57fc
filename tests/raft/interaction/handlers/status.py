"""``status [ID ...]``: each replica's role, epoch, leader, high watermark
and log batches (``BASE-LAST@EPOCH``, ``c``: a control batch)."""

from __future__ import annotations

from tests.raft.interaction.env import InteractionEnv
from tests.raft.interaction.output import status_line
from tests.raft.transcripts import Args


def handle(env: InteractionEnv, args: Args) -> list[str]:
    return [status_line(env.node(node_id)) for node_id in env.chosen(args.words)]
