"""A lossy, slow link in user space, for kernels without ``tc netem``.

``python -m kraft.tools.bench.chaos.linkrelay IFACE_A IFACE_B --loss PCT
--delay MS --jitter MS --seed N`` (run inside the namespace that holds both
interfaces) forwards every frame that arrives on one interface out of the
other, dropping each with probability ``PCT``% and holding the others for
``MS`` ± ``jitter`` milliseconds (uniform; frames may overtake each other,
as netem's jitter reorders them). SIGTERM stops it; it then prints the
frames it forwarded and dropped.

It reads and writes with packet sockets (``AF_PACKET``, needs root) with
``PACKET_VNET_HDR``: a frame comes with its virtio-net header, so a TCP
segment the sender left for the device to split (GSO, up to 64 KiB on a
veth) goes back out with its header and the kernel splits it then. Such a
frame is dropped or delayed whole: the loss is per frame handed to the
link, not per wire packet.
"""

from __future__ import annotations

import argparse
import heapq
import random
import select
import signal
import socket
import sys
import time

__all__ = ["main", "open_port"]

SOL_PACKET, PACKET_VNET_HDR, PACKET_OUTGOING = 263, 15, 4
ETH_P_ALL = 3


def open_port(interface: str) -> socket.socket:
    """A packet socket that reads every frame arriving on ``interface`` and writes frames out of it."""
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    sock.setsockopt(SOL_PACKET, PACKET_VNET_HDR, 1)
    sock.bind((interface, ETH_P_ALL))
    sock.setblocking(False)
    return sock


def relay(a: socket.socket, b: socket.socket, loss: float, delay_s: float, jitter_s: float,
          rng: random.Random, counts: dict[str, int]) -> None:
    """Forward a <-> b until a signal ends the process; ``counts`` keeps
    the frames ``forwarded`` and ``dropped``."""
    other = {a.fileno(): b, b.fileno(): a}
    held: list[tuple[float, int, socket.socket, bytes]] = []  # (due, sequence, out, frame)
    sequence = 0
    while True:
        timeout = max(0.0, held[0][0] - time.monotonic()) if held else 1.0
        ready, _, _ = select.select([a, b], [], [], timeout)
        for sock in ready:
            while True:
                try:
                    frame, address = sock.recvfrom(70000)
                except BlockingIOError:
                    break
                if address[2] == PACKET_OUTGOING:
                    continue  # our own sends, seen again
                if rng.random() * 100 < loss:
                    counts["dropped"] += 1
                    continue
                due = time.monotonic() + max(0.0, delay_s + rng.uniform(-jitter_s, jitter_s))
                sequence += 1
                heapq.heappush(held, (due, sequence, other[sock.fileno()], frame))
        now = time.monotonic()
        while held and held[0][0] <= now:
            _, _, out, frame = heapq.heappop(held)
            try:
                out.send(frame)
                counts["forwarded"] += 1
            except OSError:
                counts["dropped"] += 1  # a full queue or a frame the device refuses: lost, as on a wire


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="linkrelay", description=__doc__.splitlines()[0])
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--loss", type=float, default=0.0, help="percent of frames dropped")
    parser.add_argument("--delay", type=float, default=0.0, help="milliseconds each frame is held")
    parser.add_argument("--jitter", type=float, default=0.0, help="± milliseconds around --delay")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    a, b = open_port(args.a), open_port(args.b)
    print(f"linkrelay: {args.a} <-> {args.b}, loss {args.loss:g}%, delay {args.delay:g}±{args.jitter:g} ms",
          flush=True)
    counts = {"forwarded": 0, "dropped": 0}
    try:
        relay(a, b, args.loss, args.delay / 1000, args.jitter / 1000, random.Random(args.seed), counts)
    except (KeyboardInterrupt, SystemExit):
        pass
    print(f"linkrelay: forwarded {counts['forwarded']} frames, dropped {counts['dropped']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
