"""A voter formatted with another cluster id, in real processes: the raft
core refuses its requests and it refuses theirs (Kafka's
``KafkaRaftClient.hasValidClusterId``: INCONSISTENT_CLUSTER_ID), and within
20 s each side names the other with both ids, in one log line per peer (not
one per request); the odd one out keeps nothing from the other cluster."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from kraft.records.log import MetadataLog
from kraft.records.snapshot import BOOTSTRAP_SNAPSHOT_ID
from kraft.records.state_files import MetaProperties
from tests.harness import cli
from tests.harness.poll import until
from tests.ports import free_port

GOOD = "MkU3OEVBNTcwNTJENDM2Qg"
OTHER = "T3RoZXJDbHVzdGVySWQwMA"


def _write_configs(root: Path) -> dict[int, Path]:
    ports = {n: free_port() for n in (1, 2, 3)}
    voters = ",".join(f"{n}@127.0.0.1:{p}" for n, p in ports.items())
    paths = {}
    for n, port in ports.items():
        path = root / f"node-{n}.properties"
        path.write_text(f"process.roles=controller\nnode.id={n}\ncontroller.quorum.voters={voters}\n"
                        f"listeners=CONTROLLER://127.0.0.1:{port}\ncontroller.listener.names=CONTROLLER\n"
                        f"metadata.log.dir={root / f'data-{n}'}\n")
        paths[n] = path
    return paths


def test_a_voter_of_another_cluster_is_named_on_both_sides_and_keeps_nothing(tmp_path: Path) -> None:
    paths = _write_configs(tmp_path)
    for n, path in paths.items():
        result = cli.run("storage", "format", "-c", str(path), "-t", OTHER if n == 3 else GOOD)
        assert result.returncode == 0, result.stderr
    procs: dict[int, subprocess.Popen[bytes]] = {}
    outs = {n: tmp_path / f"node-{n}.out" for n in paths}
    try:
        for n, path in paths.items():
            with open(outs[n], "wb") as sink:
                procs[n] = subprocess.Popen(
                    [sys.executable, "-m", "kraft.cli", "node", "start", "-c", str(path),
                     "--demo-append-rate", "20"],
                    stdout=sink, stderr=subprocess.STDOUT)

        def named(n: int, peer: int, theirs: str, ours: str) -> list[str]:
            return [line for line in outs[n].read_text(errors="replace").splitlines()
                    if f"node {peer} (" in line and f"is of cluster {theirs}, not of this node's cluster {ours}"
                    in line]

        # The leader of the good pair and node 3 name each other within 20 s
        # of starting (generous bound for a loaded machine: 60 s).
        def both_named() -> bool:
            wanted = [named(3, 1, GOOD, OTHER), named(3, 2, GOOD, OTHER),
                      named(1, 3, OTHER, GOOD) + named(2, 3, OTHER, GOOD)]
            if all(wanted):
                return True
            for n, proc in procs.items():
                assert proc.poll() is None, outs[n].read_text()
            return False

        until("both sides to name the other cluster", both_named, 60, interval_s=0.2,
              detail=lambda: "\n".join(f"--- node {n}\n{outs[n].read_text()[-4000:]}" for n in outs))
        # Let the refusals repeat for a while: still one line per peer.
        time.sleep(5)  # not a timing assertion: repeats happen every election/fetch interval
        for n, peer, theirs, ours in ((3, 1, GOOD, OTHER), (3, 2, GOOD, OTHER), (1, 3, OTHER, GOOD),
                                      (2, 3, OTHER, GOOD)):
            assert len(named(n, peer, theirs, ours)) <= 1, outs[n].read_text()
        assert "--cluster-id" in named(3, 1, GOOD, OTHER)[0]
    finally:
        for proc in procs.values():
            proc.send_signal(signal.SIGTERM)
        for proc in procs.values():
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    # The good pair committed records; node 3 kept nothing of theirs.
    good_ends = []
    for n in (1, 2):
        with MetadataLog.open(tmp_path / f"data-{n}" / "__cluster_metadata-0") as log:
            good_ends.append(log.end_offset)
    assert max(good_ends) > 1
    with MetadataLog.open(tmp_path / "data-3" / "__cluster_metadata-0") as log:
        # Nothing fetched: at most the 0-0 bootstrap snapshot its own format wrote (KIP-1170, Kafka 4.4's layout).
        assert log.end_offset == 0 and log.latest_snapshot_id() in (None, BOOTSTRAP_SNAPSHOT_ID)
    assert MetaProperties.read(tmp_path / "data-3" / "meta.properties").cluster_id == OTHER
    quorum_state = (tmp_path / "data-3" / "__cluster_metadata-0" / "quorum-state").read_text()
    assert not re.search(r'"leaderId":\s*[12]\b', quorum_state), quorum_state
