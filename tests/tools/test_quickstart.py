"""``kraft quickstart --keep`` leaves a cluster worth exploring (issue 26):
real metadata records that kraft's own tools decode (it used to append bare
text, which ``observe`` and ``shell`` called undecodable, ``unknown frame
version 113``), where ``kraft`` is, and commands that start and stop the
kept cluster again -- run here exactly as printed."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from kraft.tools.quickstart import DEFAULT_PORT_RANGE, ephemeral_range, ports_in_range
from tests.harness import cli
from tests.harness.poll import settle, until
from tests.ports import free_ports


UNDECODABLE = ("undecodable", "UNREADABLE", "unknown frame version", "Traceback")


def _printed(output: str, after: str) -> str:
    """The command printed on the line after the line ``after``."""
    lines = output.splitlines()
    index = next(i for i, line in enumerate(lines) if line.endswith(after))
    return lines[index + 1].removeprefix("[quickstart]").strip()


@pytest.mark.slow
def test_quickstart_keep_leaves_a_real_image_and_the_commands_to_run_it_again(tmp_path: Path) -> None:
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    first = free_ports(1)[0]  # this test worker's block (tests/ports.py), below the ephemeral range
    run = cli.run("quickstart", "--keep", "--port-range", f"{first}-{first + 99}", timeout=600, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    out = run.stdout
    # Issue 41: then a whole Kafka cluster on kraft controllers (CI has java and the jars).
    for line in (r"brokers 101, 102, 103 registered with kraft controllers 1, 2, 3 and serve on",
                 r"created topic quickstart-kafka \(3 partitions, 3 replicas\); leaders p0=\d+, p1=\d+, p2=\d+",
                 r"produced 100 records \(acks=all, idempotent\) and consumed all 100",
                 r"kill -9 broker (\d+) \(the leader of partition 0\)",
                 r"the controller fenced broker \d+ and moved its leaderships in [\d.]+ s",
                 r"all 100 records read again from the two live brokers"):
        assert re.search(line, out), (line, out)
    victim = re.search(r"kill -9 broker (\d+)", out).group(1)  # type: ignore[union-attr]
    moved = re.search(r"moved its leaderships in [\d.]+ s: leaders (.*)", out).group(1)  # type: ignore[union-attr]
    assert f"={victim}" not in moved, moved
    [root] = [Path(p) for p in re.findall(r"files kept in (\S+)", out)]
    # Every port the kept configs (and so the restart commands) name is from the range given.
    ports = [int(p) for c in root.glob("server-*.properties") for p in re.findall(r":(\d+)", c.read_text())]
    assert len(set(ports)) == 4 and all(first <= p <= first + 99 for p in ports), ports
    kraft = str(Path(sys.executable).parent / "kraft")
    assert f"kraft is {kraft}; to type plain `kraft` in this shell: . {Path(sys.executable).parent}/activate" in out

    # The files decode as a controller's would: features, topics, partitions, configs.
    segment = root / "metadata-1" / "__cluster_metadata-0" / "00000000000000000000.log"
    dump = cli.run("dump-log", "--cluster-metadata-decoder", "--files", str(segment))
    assert dump.returncode == 0, dump.stderr
    for text in ('"type":"FEATURE_LEVEL_RECORD","version":0,"data":{"name":"metadata.version"',
                 '"type":"TOPIC_RECORD"', '"name":"quickstart-events"', '"name":"quickstart-orders"',
                 '"type":"PARTITION_RECORD"', '"type":"CONFIG_RECORD"'):
        assert text in dump.stdout, text
    shell = cli.run("shell", "--directory", str(root / "metadata-1"), "ls", "/image/topics/byName")
    assert shell.returncode == 0 and shell.stdout.split() == ["quickstart-events", "quickstart-orders"], shell
    for result in (dump, shell):
        assert not any(bad in result.stdout + result.stderr for bad in UNDECODABLE), result.stderr

    # The printed start command, as printed, then the tools on the live cluster.
    start = _printed(out, "start the kept cluster again:")
    stop = _printed(out, "stop it (SIGTERM: a leader hands over first):")
    bootstrap = re.search(r"--bootstrap-controller (\S+) describe", out).group(1)  # type: ignore[union-attr]
    subprocess.run(["bash", "-c", start], check=True, timeout=60, cwd=tmp_path)
    pids = [int((root / f"node-{n}.pid").read_text()) for n in (1, 2, 3)]
    try:
        def led(status: subprocess.CompletedProcess[str]) -> bool:
            return (status.returncode == 0 and "LeaderId:" in status.stdout
                    and "LeaderId:               -1" not in status.stdout)

        # A generous bound for a loaded machine, not a timing assertion.
        status = settle(lambda: cli.run("quorum", "--bootstrap-controller", bootstrap, "describe", "--status"), led,
                        120, interval_s=1)
        assert led(status), status.stderr
        observe = cli.run("observe", "--bootstrap-controller", bootstrap, "--timeout", "60",
                          "--data-dir", str(tmp_path / "observer"))
        assert observe.returncode == 0, observe.stderr
        assert "quickstart-events" in observe.stdout and "metadata.version=" in observe.stdout
        assert "retention.ms=86400000" in observe.stdout
        assert not any(bad in observe.stdout + observe.stderr for bad in UNDECODABLE), observe.stderr
        # The printed stop command stops all three.
        subprocess.run(["bash", "-c", stop], check=True, timeout=60, cwd=tmp_path)
        until("the quickstart's nodes to exit", lambda: not any(_alive(pid) for pid in pids), 60, interval_s=0.2,
              detail=lambda: str([pid for pid in pids if _alive(pid)]))
    finally:
        for pid in pids:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is gone for our purposes (its parent, bash, exited already).
    try:
        return Path(f"/proc/{pid}/status").read_text().find("State:\tZ") < 0
    except OSError:
        return False


def test_the_default_ports_are_below_the_ephemeral_range_and_a_range_in_it_is_refused() -> None:
    """issue 33: the quickstart drew its ports from the ephemeral range (port
    0), where an outgoing connection may take one its restart commands name."""
    low, high = ephemeral_range()
    assert DEFAULT_PORT_RANGE[1] < low
    first = free_ports(1)[0]
    assert ports_in_range(2, first, first + 50)[0] >= first
    for bad, why in ((f"{low}-{low + 10}", f"overlaps the ephemeral port range {low}-{high}"),
                     ("9093", "is not FIRST-LAST"), ("x-y", "is not FIRST-LAST"), ("10-5", "is not FIRST-LAST")):
        done = cli.run("quickstart", "--port-range", bad)
        assert done.returncode == 2 and why in done.stderr and "Traceback" not in done.stderr, done.stderr
        assert "working in" not in done.stdout  # refused before anything is made


@pytest.mark.slow
def test_without_java_the_kafka_cluster_is_skipped_and_said_why(tmp_path: Path) -> None:
    """Issue 41: the quickstart's Kafka part needs java; without it, one line says what is skipped."""
    first = free_ports(1)[0]
    run = cli.run("quickstart", "--port-range", f"{first}-{first + 99}", timeout=600,
                  env={**os.environ, "TMPDIR": str(tmp_path), "PATH": str(tmp_path / "no-bin")})
    assert run.returncode == 0, run.stdout + run.stderr
    assert ("[quickstart] skipping the Kafka cluster on kraft controllers: no java on PATH (install a JDK 17 or "
            "later, e.g. apt-get install openjdk-17-jre-headless)") in run.stdout.splitlines(), run.stdout
    assert "Traceback" not in run.stderr


def test_a_missing_tmpdir_is_named_not_replaced_by_tmp(tmp_path: Path) -> None:
    """Issue 44: TMPDIR=/nonexistent silently fell back to /tmp (Python's tempfile)."""
    missing = tmp_path / "nonexistent"
    done = cli.run("quickstart", env={**os.environ, "TMPDIR": str(missing)})
    assert done.returncode == 3, done
    assert done.stderr.strip() == (f"Error: TMPDIR={missing} does not exist: create it, set TMPDIR to a writable "
                                   "directory, or unset it to work under /tmp"), done.stderr
    assert "working in" not in done.stdout


def _quickstart(tmp_path: Path, first_port: int) -> subprocess.Popen[str]:
    """A quickstart in its own process group, as a terminal runs it (Ctrl-C reaches the whole group);
    its raft part alone (the Kafka part has a test of its own)."""
    return subprocess.Popen([sys.executable, "-m", "kraft.cli", "quickstart", "--no-kafka", "--port-range",
                             f"{first_port}-{first_port + 99}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "TMPDIR": str(tmp_path)}, start_new_session=True)


@pytest.mark.slow
@pytest.mark.parametrize("moment", ["working in", "formatted 3 voters", "leader elected", "kill -9 the leader"])
def test_ctrl_c_at_any_moment_removes_the_directory(moment: str, tmp_path: Path) -> None:
    """Issue 44: Ctrl-C at 3, 10 or 16 s left the directory every time (a
    failed run kept its files, and Ctrl-C counted as a failure)."""
    proc = _quickstart(tmp_path, free_ports(1)[0])
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if moment in line:
            break
    assert any(moment in line for line in seen), seen
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, (proc.returncode, err)
    assert "Traceback" not in err, err
    assert not list(tmp_path.glob("kraft-quickstart-*")), (list(tmp_path.iterdir()), out)


@pytest.mark.slow
def test_two_quickstarts_at_once_choose_different_ports(tmp_path: Path) -> None:
    """Issue 44: both took the first free ports of the range; the loser
    exited 5 and kept an empty directory. They take turns choosing now."""
    first = free_ports(1)[0]
    procs = [_quickstart(tmp_path, first) for _ in range(2)]
    results = [p.communicate(timeout=600) for p in procs]
    for proc, (out, err) in zip(procs, results):
        assert proc.returncode == 0, (out, err)
    assert not list(tmp_path.glob("kraft-quickstart-*")), list(tmp_path.iterdir())
