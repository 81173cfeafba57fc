"""Real quorums for the doctor and recovery tests: ``kraft node start``
processes (tests/harness/processes.py) on dynamic-quorum configs formatted by the
real ``kraft storage format``, driven with the real ``kraft`` CLI."""

from __future__ import annotations

import re
import subprocess
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

from kraft.records.state_files import uuid_to_kafka
from tests.harness import cli
from tests.harness.configs import format_node, write_configs
from tests.harness.poll import until
from tests.harness.processes import NodeProcess


def bootstrap(ports: Mapping[int, int], ids: list[int] | None = None) -> str:
    return ",".join(f"127.0.0.1:{ports[i]}" for i in (ids if ids is not None else sorted(ports)))


def quorum(ports: Mapping[int, int], *args: str, ids: list[int] | None = None,
           timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return cli.run("quorum", "--bootstrap-controller", bootstrap(ports, ids), *args, timeout=timeout)


def status(ports: Mapping[int, int], ids: list[int]) -> dict[str, str] | None:
    out = quorum(ports, "describe", "--status", ids=ids, timeout=60)
    if out.returncode != 0:
        return None
    return {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in out.stdout.splitlines())}


def voters_of(ports: Mapping[int, int], ids: list[int]) -> list[int] | None:
    s = status(ports, ids)
    return None if s is None else sorted(int(i) for i in re.findall(r'"id": (\d+)', s["CurrentVoters"]))


def leader_of(ports: Mapping[int, int], ids: list[int]) -> int:
    s = until("a leader", lambda: status(ports, ids))
    return int(s["LeaderId"])  # type: ignore[index]


def caught_up(ports: Mapping[int, int], ids: list[int]) -> bool:
    """Every voter's Lag is 0 in ``describe --replication``."""
    out = quorum(ports, "describe", "--replication", ids=ids, timeout=60)
    if out.returncode != 0:
        return False
    rows = [line.split() for line in out.stdout.splitlines()[1:] if line.strip()]
    voters = [r for r in rows if r[-1] in ("Leader", "Follower")]
    return len(voters) == len(ids) and all(r[3] == "0" for r in voters)


class DynamicQuorum:
    """Voters formatted with ``--initial-controllers``, spare nodes formatted
    plainly (they join as observers); every node's config lists every port
    in ``controller.quorum.bootstrap.servers``."""

    def __init__(self, root: Path, voters: list[int], spares: Sequence[int] = (), append_rate: float = 40,
                 cluster_id: str | None = None, extra: dict[str, str] | None = None) -> None:
        ids = [*voters, *spares]
        self.root = root
        self.voters = list(voters)
        self.paths, self.ports = write_configs(root, ids, extra={
            "controller.quorum.election.timeout.ms": "1000", "controller.quorum.fetch.timeout.ms": "2000",
            **(extra or {})})
        self.directory_ids = {i: uuid.uuid4() for i in voters}
        spec = ",".join(f"{i}@127.0.0.1:{self.ports[i]}:{uuid_to_kafka(self.directory_ids[i])}" for i in voters)
        kwargs = {"cluster_id": cluster_id} if cluster_id else {}
        for i in voters:
            format_node(self.paths[i], "--initial-controllers", spec, **kwargs)
        for i in spares:
            format_node(self.paths[i], **kwargs)
        self.procs = {i: NodeProcess(i, self.paths[i], root, append_rate) for i in ids}

    def dir(self, node_id: int) -> Path:
        return self.root / f"node-{node_id}"

    def start(self, *ids: int) -> None:
        for i in ids or self.voters:
            self.procs[i].start()

    def stop(self) -> None:
        for p in self.procs.values():
            if p.alive:
                p.terminate()

    def outputs(self) -> str:
        return "\n".join(f"--- node {i}\n{p.output()[-3000:]}" for i, p in self.procs.items())
