"""The README's transcripts that need a running quorum, run against one:
three static voters (their leader writing the quickstart's metadata records,
:mod:`kraft.tools.quickstart_records`) and an observer, node 9.

Each block runs as written, with two substitutions this test owns: the
addresses the README shows (``127.0.0.1:36099``, ``127.0.0.1:9093``) become
the voters' of this quorum, and a ``--follow`` command is stopped with
Ctrl-C (SIGINT, its documented way to end, exit 0) after a few seconds.
The Python example gets the quorum as ``BOOTSTRAP`` and its own
observer's local copy (stopped by then) as ``META_DIR``.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness import cli
from tests.harness.configs import CLUSTER_ID, make_configs
from tests.harness.poll import settle
from tests.test_readme import delegated_blocks, readme_block, readme_blocks, run_example

pytestmark = pytest.mark.slow

HERE = "tests/test_readme_transcripts.py"
# kafka-features.sh's line for INVALID_UPDATE_VERSION from the leader
# (KRaftVersionUpgrade's message; kraft.raft.kraft_version).
NOT_YET = "because not all of the voters support it"
README_ADDRESSES = re.compile(r"127\.0\.0\.1:(?:36099|9093)")
#: controller.quorum.fetch.timeout.ms of the test's quorum (Kafka's: 2000).
STEADY_FETCH_TIMEOUT_MS = 120_000


class Quorum:
    def __init__(self, root: Path) -> None:
        self.root = root
        # The transcripts show one leader and observer 9 known to it; a leader
        # change shows another observer list until 9 fetches from the new
        # leader. A fetch timeout (and the leader's check-quorum, 1.5 times
        # it) far above any stall of a loaded machine keeps the first leader:
        # with Kafka's 2 s a node starved of CPU for 2 s started an election.
        self.configs = make_configs(root, [1, 2, 3], observers=[9], extra={
            "kraft.witness": "false", "controller.quorum.fetch.timeout.ms": str(STEADY_FETCH_TIMEOUT_MS)})
        self.procs: list[subprocess.Popen[bytes]] = []
        self.epoch: int | None = None

    def address(self, node_id: int) -> str:
        text = self.configs[node_id].read_text()
        return re.search(r"listeners=CONTROLLER://(\S+)", text).group(1)  # type: ignore[union-attr]

    def start(self) -> None:
        for node_id, config in self.configs.items():
            load = ["--demo-append-rate", "2", "--demo-records", "metadata"] if node_id != 9 else []
            with open(self.root / f"node-{node_id}.log", "ab") as out:
                self.procs.append(subprocess.Popen(
                    [sys.executable, "-m", "kraft.cli", "node", "start", "-c", str(config), *load],
                    stdout=out, stderr=subprocess.STDOUT))

    def wait_ready(self) -> None:
        """A leader, the observer known to it, the quickstart topics committed."""
        def ready(quorum: str) -> bool:
            hwm = re.search(r"HighWatermark:\s+(\d+)", quorum)
            # The leader's first batch (LeaderChange, then 11 records: features,
            # topics, partitions, a config) is committed past offset 12.
            return bool(hwm and int(hwm.group(1)) > 12 and '"id": 9' in quorum)

        quorum = settle(self.describe, ready, 180, interval_s=1)  # a bound for a loaded machine, not a timing assertion
        assert ready(quorum), quorum
        self.epoch = self.leader_epoch(quorum)

    def describe(self) -> str:
        done = cli.run("quorum", "--bootstrap-controller", self.address(1), "describe", "--status")
        return done.stdout + done.stderr

    @staticmethod
    def leader_epoch(describe: str) -> int | None:
        found = re.search(r"LeaderEpoch:\s+(\d+)", describe)
        return int(found.group(1)) if found else None

    def leader_changed(self) -> bool:
        """Whether the quorum elected another leader since :meth:`wait_ready`
        (then it waits for the new one to know observer 9 again)."""
        if self.leader_epoch(self.describe()) == self.epoch:
            return False
        self.wait_ready()
        return True

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _running_quorum(tmp_path_factory: pytest.TempPathFactory, name: str) -> Iterator[Quorum]:
    q = Quorum(tmp_path_factory.mktemp(name))
    q.start()
    try:
        q.wait_ready()
        yield q
    finally:
        q.stop()


@pytest.fixture(scope="module")
def quorum(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Quorum]:
    yield from _running_quorum(tmp_path_factory, "quorum")


@pytest.fixture(scope="module")
def describe_quorum(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Quorum]:
    """The quorum of docs/tools/quorum.md's transcripts, which show the
    observers the leader knows: one no ``kraft observe`` run has fetched
    from (each is an observer with an id of its own, listed for Kafka's
    5-minute observer session), whatever order the blocks run in."""
    yield from _running_quorum(tmp_path_factory, "describe-quorum")


def _blocks(lang: str) -> list[tuple[str, str]]:
    mine = {line for line, test in delegated_blocks().items() if test == HERE}
    return [(line, code) for line, block_lang, code in readme_blocks() if line in mine and block_lang == lang]


def _adapt(quorum: Quorum):  # type: ignore[no-untyped-def]
    def adapt(command: str) -> str:
        command = README_ADDRESSES.sub(quorum.address(1), command)
        if "--follow" in command:
            return f"{{ timeout -s INT 8 {command} || [ $? -eq 124 ]; }}"
        return command
    return adapt


def test_this_test_runs_console_and_python_blocks() -> None:
    assert len(_blocks("console")) == 3 and len(_blocks("python")) == 1


@pytest.mark.parametrize("line", [line for line, _ in _blocks("console")])
def test_console_transcript(line: str, request: pytest.FixtureRequest, tmp_path: Path,
                            monkeypatch: pytest.MonkeyPatch) -> None:
    quorum: Quorum = request.getfixturevalue("describe_quorum" if line.startswith("docs/tools/quorum.md:")
                                             else "quorum")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))  # the observer's default --data-dir
    code = readme_block(line)
    deadline = time.monotonic() + 120
    while True:
        try:
            run_example("console", code, tmp_path, adapt=_adapt(quorum))
            return
        except AssertionError as e:
            # kraft.version's upgrade waits for every voter's UpdateRaftVoter
            # (INVALID_UPDATE_VERSION until then, printed with Kafka's message),
            # as Kafka's does; a refused upgrade changes nothing, so the block
            # is run again.
            # A leader change (the quorum's own business, not the block's)
            # changes what describe shows: the block is run again.
            if (NOT_YET not in str(e) and not quorum.leader_changed()) or time.monotonic() > deadline:
                raise
            for child in tmp_path.iterdir():
                subprocess.run(["rm", "-rf", str(child)], check=True)
            time.sleep(2)


def test_python_api_example(quorum: Quorum, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    [(_, code)] = _blocks("python")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("BOOTSTRAP", quorum.address(1))
    # The offline half reads the local copy the online half's observer
    # left (a stopped node's metadata.log.dir, in Kafka's layout).
    monkeypatch.setenv("META_DIR", str(tmp_path / "state" / "kraft" / "observer" / CLUSTER_ID))
    out = run_example("python", code, tmp_path)
    lines = out.splitlines()
    assert re.fullmatch(r"\(\d, \d, \d\)|\[\d, \d, \d\]", lines[0]), out  # partition 0's ISR: three replicas
    assert "'type': 'LEADER_CHANGE'" in lines[1] and "'type': 'FEATURE_LEVEL_RECORD'" in lines[2], out
    assert lines[-1] == "['quickstart-events', 'quickstart-orders']", out
