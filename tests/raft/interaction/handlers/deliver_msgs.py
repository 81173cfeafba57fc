"""``deliver-msgs [from=ID] [to=ID] [drop]``: hand the messages in flight
(those from/to the given replicas) to their recipients' cores, recipient by
recipient, each one's in the order they were sent; ``drop`` loses them
instead. Stepping does not poll: the recipients answer on their next
``process-ready``."""

from __future__ import annotations

from tests.raft.interaction.env import InteractionEnv
from tests.raft.transcripts import Args, TranscriptError


def receive(env: InteractionEnv, recipient: int, source: int | None = None) -> list[str]:
    """``> ID receiving messages`` and one line per message, or nothing."""
    flights = env.take_in_flight(source=source, recipient=recipient)
    if not flights:
        return []
    return [f"> {recipient} receiving messages", *("  " + env.deliver(f) for f in flights)]


def handle(env: InteractionEnv, args: Args) -> list[str]:
    source = args.take("from")
    recipient = args.take("to")
    drop = args.words == ["drop"]
    if args.words and not drop:
        raise TranscriptError(f"deliver-msgs: unknown words {args.words}")
    if drop:
        flights = env.take_in_flight(source=source, recipient=recipient)
        return [f"dropped: {env.describe(f)}" for f in flights]
    out: list[str] = []
    for node_id in [recipient] if recipient is not None else env.node_ids:
        out.extend(receive(env, node_id, source))
    return out

