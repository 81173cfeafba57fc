"""``kraft observe`` and ``kraft shell --bootstrap-controller`` as a user runs
them (real subprocesses) against real nodes."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import trio

from kraft.node.node import KraftNode
from tests.harness import cli
from tests.harness.configs import CLUSTER_ID
from tests.harness.inprocess import append_until_ok, node_config, start
from tests.image.records import partition, rec, topic
from tests.programs.test_observer import fast_configs

REPO = Path(__file__).resolve().parents[2]



async def test_observe_prints_the_image_and_refuses_a_wrong_cluster_id(tmp_path: Path) -> None:
    paths = fast_configs(tmp_path, [1, 2, 3])
    with trio.fail_after(90):
        async with trio.open_nursery() as nursery:
            nodes: list[KraftNode] = [await start(nursery, node_config(p)) for p in paths.values()]
            foo = uuid.uuid4()
            await append_until_ok(nodes, [topic("foo", foo), partition(foo, 0, [1, 2, 3]), partition(foo, 1, [2, 3, 1]),
                                          rec("FeatureLevelRecord", name="metadata.version", feature_level=21)])
            bootstrap = f"127.0.0.1:{nodes[1].ports['CONTROLLER']}"

            table = await cli.run_async("observe", "--bootstrap-controller", bootstrap,
                                        "--data-dir", str(tmp_path / "o"), "--timeout", "30", cwd=REPO)
            assert table.returncode == 0, table.stderr.decode()
            text = table.stdout.decode()
            assert f"cluster {CLUSTER_ID}" in text and "features: metadata.version=21" in text
            assert any(line.split()[:1] == ["foo"] and line.split()[2:] == ["2", "3"] for line in text.splitlines())

            # A second run resumes from the same directory (same node id) and prints JSON.
            as_json = await cli.run_async("observe", "--bootstrap-controller", bootstrap, "--data-dir",
                                          str(tmp_path / "o"), "--format", "json", cwd=REPO)
            assert as_json.returncode == 0, as_json.stderr.decode()
            image = json.loads(as_json.stdout)
            assert image["clusterId"] == CLUSTER_ID and sorted(image["topics"]["foo"]["partitions"]) == ["0", "1"]

            wrong = await cli.run_async("observe", "--bootstrap-controller", bootstrap,
                                        "--data-dir", str(tmp_path / "w"), "--cluster-id", "AAAAAAAAAAAAAAAAAAAAAA",
                                        cwd=REPO)
            assert wrong.returncode == 1
            assert f"has cluster id {CLUSTER_ID}, not AAAAAAAAAAAAAAAAAAAAAA" in wrong.stderr.decode()
            assert "Traceback" not in wrong.stderr.decode()

            shell = await cli.run_async("shell", "--bootstrap-controller", bootstrap, "--data-dir", str(tmp_path / "s"),
                                        "cat", "/image/topics/byName/foo/1", cwd=REPO)
            assert shell.returncode == 0, shell.stderr.decode()
            assert shell.stdout.decode().startswith("PartitionRegistration(replicas=[2, 3, 1], ")
            nursery.cancel_scope.cancel()
