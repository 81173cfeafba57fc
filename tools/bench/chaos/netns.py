"""The network nemesis: one network namespace per node, joined by a bridge in
a namespace of the run's own, and faults injected between them.

Nothing here touches the host's interfaces: the bridge, the veth pairs and
the addresses (``10.211.0.0/24``, used only inside these namespaces) all
live in namespaces this module creates and :meth:`Network.close` deletes.
A node process is started inside its namespace with ``ip netns exec``
(which execs the command: same process id, so signals reach the node).

A dropped direction A -> B is a permanent neighbour entry in A's namespace
mapping B's address to a link-layer address nobody owns: A's packets to B
leave A and are silently dropped by the bridge's other ports (as an
iptables DROP would, so TCP waits and retransmits), while B's packets still
reach A. Partitions, bridges and one-way faults are sets of such
directions; overlapping faults add up, and a heal removes only its own.
The flaky link is ``tc netem`` (loss, delay with jitter, reorder,
duplicate) on the node's interface. Where the kernel has no netem (this
machine's has neither netem nor tc classifiers and actions), the node's
port is taken off the bridge and a userspace relay (:mod:`.linkrelay`, in
the bridge's namespace) forwards between it and a new port on the bridge,
dropping and delaying frames; the run's notes say so once.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable

__all__ = ["NetworkUnavailable", "Network", "SUBNET", "network_unavailable_reason"]

SUBNET = "10.211.0"
#: A link-layer address no interface has: frames to it are dropped by the bridge's ports.
NOWHERE = "02:00:00:de:ad:00"


class NetworkUnavailable(RuntimeError):
    """Namespaces cannot be created here (the reason is the message)."""


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), capture_output=True, text=True)


def network_unavailable_reason() -> str | None:
    """Why network namespaces cannot be used here, or None when they can."""
    if shutil.which("ip") is None:
        return "the ip command is missing (Debian: apt-get install iproute2)"
    if os.geteuid() != 0:
        return "creating network namespaces needs root"
    name = f"kraftchaos-probe-{os.getpid()}"
    done = _run("ip", "netns", "add", name)
    if done.returncode != 0:
        return f"ip netns add failed: {done.stderr.strip() or done.returncode}"
    try:
        if not _netem_works(name) and not _packet_sockets_work():
            return ("a flaky link needs tc netem (module sch_netem) or packet sockets (AF_PACKET) for a "
                    "userspace relay, and this kernel has neither")
    finally:
        _run("ip", "netns", "del", name)
    return None


def _netem_works(namespace: str) -> bool:
    if shutil.which("tc") is None:
        return False
    done = _run("tc", "-n", namespace, "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms")
    return done.returncode == 0


def _packet_sockets_work() -> bool:
    try:
        socket.socket(socket.AF_PACKET, socket.SOCK_RAW).close()
    except (OSError, AttributeError):
        return False
    return True


def _die_with_parent() -> None:
    """In the relay's child before exec: SIGTERM when the run's process dies, even by kill -9."""
    import ctypes

    ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class Network:
    """The namespaces of one run: ``node_ids`` each get ``10.211.0.<id>``."""

    def __init__(self, node_ids: Iterable[int], tag: str | None = None) -> None:
        self.tag = tag or f"kraftchaos{os.getpid()}"
        self.node_ids = list(node_ids)
        self.bridge_ns = f"{self.tag}-br"
        self.created: list[str] = []
        #: Dropped directions (src, dst) with the number of faults asking for each.
        self.dropped: Counter[tuple[int, int]] = Counter()
        self.flaky_kind: str | None = None
        self.notes: list[str] = []
        #: node -> the userspace relay making its link flaky.
        self.relays: dict[int, subprocess.Popen[bytes]] = {}
        #: The last line of each stopped relay (the frames it forwarded and dropped).
        self.relay_said: list[str] = []

    def namespace(self, node_id: int) -> str:
        return f"{self.tag}-n{node_id}"

    def address(self, node_id: int) -> str:
        return f"{SUBNET}.{node_id}"

    def exec_prefix(self, node_id: int) -> list[str]:
        """The command prefix that runs a program inside the node's namespace."""
        return ["ip", "netns", "exec", self.namespace(node_id)]

    def _ip(self, *args: str) -> None:
        done = _run("ip", *args)
        if done.returncode != 0:
            raise NetworkUnavailable(f"ip {' '.join(args)}: {done.stderr.strip() or done.returncode}")

    def create(self) -> None:
        self._ip("netns", "add", self.bridge_ns)
        self.created.append(self.bridge_ns)
        self._ip("-n", self.bridge_ns, "link", "add", "br0", "type", "bridge")
        self._ip("-n", self.bridge_ns, "link", "set", "br0", "up")
        for node_id in self.node_ids:
            ns = self.namespace(node_id)
            self._ip("netns", "add", ns)
            self.created.append(ns)
            port = f"v{node_id}"
            self._ip("-n", self.bridge_ns, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", ns)
            self._ip("-n", self.bridge_ns, "link", "set", port, "master", "br0", "up")
            self._ip("-n", ns, "addr", "add", f"{self.address(node_id)}/24", "dev", "eth0")
            self._ip("-n", ns, "link", "set", "eth0", "up")
            self._ip("-n", ns, "link", "set", "lo", "up")

    def close(self) -> None:
        """Stop the relays, delete every namespace this run created (their interfaces go with them)."""
        for node_id in list(self.relays):
            self._stop_relay(node_id)
        for ns in reversed(self.created):
            _run("ip", "netns", "del", ns)
        self.created.clear()

    # --- faults --------------------------------------------------------------------------

    def _set_drop(self, src: int, dst: int, drop: bool) -> None:
        ns, addr = self.namespace(src), self.address(dst)
        if drop:
            self._ip("-n", ns, "neigh", "replace", addr, "lladdr", NOWHERE, "dev", "eth0", "nud", "permanent")
        else:
            _run("ip", "-n", ns, "neigh", "del", addr, "dev", "eth0")

    def drop(self, directions: Iterable[tuple[int, int]]) -> None:
        """Drop the packets of each (src, dst) direction until :meth:`undrop`."""
        for direction in directions:
            self.dropped[direction] += 1
            if self.dropped[direction] == 1:
                self._set_drop(*direction, True)

    def undrop(self, directions: Iterable[tuple[int, int]]) -> None:
        for direction in directions:
            if self.dropped[direction] <= 0:
                continue
            self.dropped[direction] -= 1
            if self.dropped[direction] == 0:
                del self.dropped[direction]
                self._set_drop(*direction, False)

    @staticmethod
    def split(a: Iterable[int], b: Iterable[int]) -> list[tuple[int, int]]:
        """Both directions between every node of ``a`` and every node of ``b``."""
        a, b = list(a), list(b)
        return [(x, y) for x in a for y in b] + [(y, x) for x in a for y in b]

    def flaky(self, node_id: int, loss_pct: float, delay_ms: int, seed: int = 0) -> str:
        """Make the node's link lossy and slow; a description of what was set."""
        ns, jitter = self.namespace(node_id), delay_ms // 2
        done = _run("tc", "-n", ns, "qdisc", "replace", "dev", "eth0", "root", "netem",
                    "loss", f"{loss_pct:g}%", "delay", f"{delay_ms}ms", f"{jitter}ms",
                    "reorder", "25%", "duplicate", "2%")
        if done.returncode == 0:
            self.flaky_kind = "netem"
            return f"netem loss {loss_pct:g}%, delay {delay_ms}±{jitter} ms, reorder 25%, duplicate 2%"
        # No sch_netem in this kernel: the userspace relay between the node's port and the bridge.
        self._start_relay(node_id, loss_pct, delay_ms, jitter, seed)
        if self.flaky_kind != "relay":
            self.notes.append("tc netem is not available in this kernel (module sch_netem): flaky links go "
                              "through a userspace relay (packet sockets in the bridge's namespace): loss and "
                              "delay with jitter per frame, no duplicates")
        self.flaky_kind = "relay"
        return f"userspace relay, loss {loss_pct:g}%, delay {delay_ms}±{jitter} ms"

    def _start_relay(self, node_id: int, loss_pct: float, delay_ms: int, jitter_ms: int, seed: int) -> None:
        br, port, side, bridge_side = self.bridge_ns, f"v{node_id}", f"f{node_id}a", f"f{node_id}b"
        self._ip("-n", br, "link", "add", side, "type", "veth", "peer", "name", bridge_side)
        self._ip("-n", br, "link", "set", bridge_side, "master", "br0", "up")
        self._ip("-n", br, "link", "set", side, "up", "promisc", "on")
        self._ip("-n", br, "link", "set", port, "nomaster", "promisc", "on")
        self.relays[node_id] = subprocess.Popen(
            ["ip", "netns", "exec", br, sys.executable, "-m", "kraft.tools.bench.chaos.linkrelay", port, side,
             "--loss", f"{loss_pct:g}", "--delay", str(delay_ms), "--jitter", str(jitter_ms), "--seed", str(seed)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)

    def _stop_relay(self, node_id: int) -> str:
        relay = self.relays.pop(node_id)
        relay.terminate()
        try:
            said, _ = relay.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            relay.kill()
            said, _ = relay.communicate()
        last = (said.decode(errors="replace").strip().splitlines() or [""])[-1]
        self.relay_said.append(last)
        br = self.bridge_ns
        _run("ip", "-n", br, "link", "del", f"f{node_id}a")
        _run("ip", "-n", br, "link", "set", f"v{node_id}", "promisc", "off", "master", "br0")
        return last.removeprefix("linkrelay: ")

    def steady(self, node_id: int) -> str:
        """The node's link as the others; what the relay did, if one ran."""
        if node_id in self.relays:
            return self._stop_relay(node_id)
        _run("tc", "-n", self.namespace(node_id), "qdisc", "del", "dev", "eth0", "root")
        return ""

    def heal_all(self) -> None:
        for src, dst in list(self.dropped):
            self._set_drop(src, dst, False)
        self.dropped.clear()
        for node_id in self.node_ids:
            self.steady(node_id)

    def connected(self, a: int, b: int) -> bool:
        return (a, b) not in self.dropped and (b, a) not in self.dropped
