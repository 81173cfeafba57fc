"""Topic creation through a real broker's admin API, as a process of its own
that writes a complete history: ``python tests/kafka/topic_history.py
BOOTSTRAP HISTORY STOP``.

It runs where the test cannot reach the broker itself (inside a network
namespace, started with ``ip netns exec``). Each attempt appends two JSON
lines to ``HISTORY``, flushed and fsynced: the invocation before the request
is sent and its completion after (``ok``, or ``info`` when the outcome is
unknown: a time-out or a lost connection may still have created the topic),
as Jepsen records every operation. ``t`` is ``time.monotonic()``, the same
clock in every process of the machine, so the test compares completions with
the times it healed each fault. It stops once the file ``STOP`` exists.

It imports nothing of kraft: the client is kafka-python's.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import IO, Any

#: Each request's bound: short, so that an attempt stuck on a dead
#: controller gives way to a fresh one and the history shows when commits resumed.
TIMEOUT_MS = 5_000
PAUSE_S = 0.2


def _record(out: IO[str], entry: dict[str, Any]) -> None:
    out.write(json.dumps(entry) + "\n")
    out.flush()
    os.fsync(out.fileno())


def _admin(bootstrap: str) -> Any:
    from kafka.admin import KafkaAdminClient

    return KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=TIMEOUT_MS * 2,
                            client_id="kraft-nemesis-load")


def _create(admin: Any, topic: str) -> None:
    from kafka.admin import NewTopic
    from kafka.errors import TopicAlreadyExistsError

    try:
        admin.create_topics([NewTopic(topic, 1, 1)], timeout_ms=TIMEOUT_MS)
    except TopicAlreadyExistsError:
        pass  # only this process creates topics: an earlier attempt of ours did commit it


def main(argv: list[str]) -> int:
    bootstrap, history, stop = argv[0], Path(argv[1]), Path(argv[2])
    admin: Any = None
    n = 0
    with open(history, "a") as out:
        while not stop.exists():
            topic = f"nemesis-{n}"
            _record(out, {"op": n, "topic": topic, "type": "invoke", "t": time.monotonic()})
            try:
                if admin is None:
                    admin = _admin(bootstrap)
                _create(admin, topic)
            except Exception as e:  # noqa: BLE001 -- any failure leaves the outcome unknown: recorded as such
                _record(out, {"op": n, "topic": topic, "type": "info", "t": time.monotonic(),
                              "error": f"{type(e).__name__}: {e}"[:200]})
                if admin is not None:
                    try:
                        admin.close()
                    except Exception:  # noqa: BLE001 -- a client already broken: a fresh one comes next
                        pass
                admin = None  # its metadata may name a controller or connection that is gone
            else:
                _record(out, {"op": n, "topic": topic, "type": "ok", "t": time.monotonic()})
            n += 1
            time.sleep(PAUSE_S)
    if admin is not None:
        admin.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
