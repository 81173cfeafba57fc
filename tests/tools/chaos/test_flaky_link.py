"""The flaky link on this kernel (:meth:`Network.flaky`): netem where the
kernel has it, else the userspace relay (:mod:`kraft.tools.bench.chaos.linkrelay`)
between the node's port and the bridge. Real namespaces, real TCP through
the link: every byte arrives (TCP repairs the loss) while the relay drops
frames, the relay is the node's only path while it runs, and the heal and
the close leave no relay and no port."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from kraft.tools.bench.chaos.netns import Network, network_unavailable_reason
from tests.kafka.releases import unavailable

#: 50 small request/response rounds on one connection: each reply must come back whole.
ROUNDS = """
import socket, sys, time
if sys.argv[1] == "serve":
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((sys.argv[2], 9200)); s.listen(); print("listening", flush=True)
    c, _ = s.accept()
    while data := c.recv(100):
        c.sendall(data)
else:
    c = socket.create_connection((sys.argv[2], 9200), timeout=10)
    t = time.monotonic()
    for _ in range(50):
        c.sendall(b"x" * 100)
        got = b""
        while len(got) < 100:
            got += c.recv(100 - len(got))
        assert got == b"x" * 100
    print("rounds done")
"""


def _rounds(net: Network) -> None:
    server = subprocess.Popen(net.exec_prefix(2) + [sys.executable, "-c", ROUNDS, "serve", net.address(2)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None and server.stdout.readline().startswith("listening")
        done = subprocess.run(net.exec_prefix(1) + [sys.executable, "-c", ROUNDS, "client", net.address(2)],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and done.stdout.strip() == "rounds done", done.stderr
    finally:
        server.kill()
        server.wait()


def test_a_flaky_link_delays_and_drops_yet_tcp_delivers_and_the_heal_removes_it() -> None:
    reason = network_unavailable_reason()
    if reason is not None:
        unavailable(reason, "network namespaces (the partition nemesis)")  # CI=true: a failure
    net = Network([1, 2], tag=f"kraftchaos{__import__('os').getpid()}")
    try:
        net.create()
        _rounds(net)
        detail = net.flaky(1, loss_pct=20, delay_ms=20, seed=3)
        assert "loss 20%" in detail and "delay 20±10 ms" in detail
        _rounds(net)
        if net.flaky_kind != "relay":
            return  # netem: the kernel's business
        assert "userspace relay" in net.notes[0] and list(net.relays) == [1]
        net.steady(1)
        forwarded, dropped = map(int, re.findall(r"forwarded (\d+) frames, dropped (\d+)", net.relay_said[0])[0])
        assert forwarded > 100 and dropped > 0, net.relay_said
        assert net.relays == {}
        _rounds(net)  # back on the bridge
        # While it runs the relay is the only path: without it nothing gets through.
        net.flaky(1, loss_pct=0, delay_ms=0)
        net.relays[1].kill()
        net.relays[1].wait()
        with pytest.raises(AssertionError):
            _rounds(net)
    finally:
        relays = list(net.relays.values())
        net.close()
    assert all(r.poll() is not None for r in relays)
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert net.tag not in listed
