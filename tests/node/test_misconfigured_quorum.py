"""Misconfigurations only a running node can see (issue 44, item 2), on
real processes: a node whose voter list points back at itself gets an
answer that breaks the protocol on every request; the node logs the first
and counts the rest (once a minute), and backs off further each time."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

from tests.harness import cli
from tests.harness.poll import until
from tests.ports import free_port

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qg"


def test_repeated_protocol_violations_are_logged_once_then_counted(tmp_path: Path) -> None:
    """The issue's setup: voter 2 at this node's own listener; the node
    dials itself and refuses its own answer. It logged ~37 lines a second."""
    port = free_port()
    config = tmp_path / "observer.properties"
    config.write_text(f"process.roles=broker\nnode.id=1\ncontroller.quorum.voters=2@127.0.0.1:{port}\n"
                      f"listeners=CONTROLLER://127.0.0.1:{port}\ncontroller.listener.names=CONTROLLER\n"
                      f"metadata.log.dir={tmp_path / 'data'}\n")
    formatted = cli.run("storage", "format", "-c", str(config), "-t", CLUSTER)
    assert formatted.returncode == 0, formatted.stderr
    log_path = tmp_path / "node.log"
    with log_path.open("w") as out:
        node = subprocess.Popen(cli.kraft_args("node", "start", "-c", str(config)), stdout=out,
                                stderr=subprocess.STDOUT)
        try:
            def refused() -> bool:
                if "refused a protocol violation" in log_path.read_text():
                    return True
                assert node.poll() is None, log_path.read_text()
                return False

            until("a refused protocol violation", refused, 120, interval_s=0.1, detail=log_path.read_text)
            # Several seconds of a loop that answered within milliseconds.
            time.sleep(3)
        finally:
            node.send_signal(signal.SIGINT)
            node.wait(timeout=60)
    lines = [line for line in log_path.read_text().splitlines() if "refused a protocol violation" in line]
    assert len(lines) == 1, lines
    assert "from node 2: peer rejected our request as invalid" in lines[0]


def _logged(what: str, paths: list[Path], procs: list[subprocess.Popen[bytes]]) -> Path:
    """The first of ``paths`` whose text holds ``what`` (120 s at most)."""
    def holder() -> Path | None:
        assert all(p.poll() is None for p in procs), [p.read_text() for p in paths]
        return next((path for path in paths if what in path.read_text()), None)
    return until(what, holder, detail=lambda: "\n".join(p.read_text()[-2000:] for p in paths))  # type: ignore[return-value]


def test_a_second_process_with_a_voters_id_is_named_by_the_leader_and_the_doctor(tmp_path: Path) -> None:
    """Issue 44: a copy of a follower's config started elsewhere loops on
    "lost pre-vote", then both follow the leader as one row in describe,
    no warning anywhere. Each fetches with its own directory id
    (KIP-853's ReplicaDirectoryId): the leader sees them alternate."""
    from tests.harness.configs import CLUSTER_ID, make_configs

    configs = make_configs(tmp_path, [1, 2, 3])
    logs = {n: tmp_path / f"node-{n}.log" for n in configs}
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for n, config in configs.items():
            with logs[n].open("w") as out:
                procs.append(subprocess.Popen(cli.kraft_args("node", "start", "-c", str(config)), stdout=out,
                                              stderr=subprocess.STDOUT))
        leader_log = _logged(" -> Leader in epoch", list(logs.values()), procs)
        leader = next(n for n, path in logs.items() if path == leader_log)
        twin_of = min(n for n in configs if n != leader)
        port = free_port()
        text = configs[twin_of].read_text()
        own = next(line for line in text.splitlines() if line.startswith("listeners="))
        twin = tmp_path / "twin.properties"
        twin.write_text(text.replace(own, f"listeners=CONTROLLER://127.0.0.1:{port}")
                        .replace(f"node-{twin_of}", "twin"))
        formatted = cli.run("storage", "format", "-c", str(twin), "-t", CLUSTER_ID)
        assert formatted.returncode == 0, formatted.stderr
        twin_log = tmp_path / "twin.log"
        with twin_log.open("w") as out:
            procs.append(subprocess.Popen(cli.kraft_args("node", "start", "-c", str(twin)), stdout=out,
                                          stderr=subprocess.STDOUT))
        _logged(f"two processes fetch as node {twin_of}", [leader_log], procs)
        leader_port = next(line for line in configs[leader].read_text().splitlines()
                           if line.startswith("listeners=")).rsplit(":", 1)[1]
        doctor = cli.run("doctor", "--bootstrap-controller", f"127.0.0.1:{leader_port}")
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGINT)
        for proc in procs:
            proc.wait(timeout=60)
    lines = [line for line in leader_log.read_text().splitlines() if "two processes fetch as node" in line]
    assert len(lines) == 1, lines  # once, not on every fetch
    assert "give one of them another node.id" in lines[0]
    assert "two processes run with one node id" in doctor.stdout + doctor.stderr, doctor
    report = doctor.stdout + doctor.stderr
    assert report.count("directory ") >= 2 and report.count("from 127.0.0.1:") >= 2, report
