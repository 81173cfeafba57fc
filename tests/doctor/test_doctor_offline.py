"""``kraft doctor --dir/--config``: each offline finding created for real
(directories formatted by ``kraft storage format``, configs as operators
write them, copies of real Kafka 4.0 directories, a filled tmpfs) and
recognised; a healthy set exits 0."""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from kraft.records.bootstrap import DynamicVoter
from kraft.tools.doctor import doctor_command
from kraft.tools.storage import FormatRequest, run_format
from tests.harness import cli
from tests.harness.configs import CLUSTER_ID
from tests.ports import free_ports

from tests.conftest import FIXTURES
REAL = FIXTURES / "kafka-4.0-real"
OTHER_CLUSTER = "b3RoZXJDbHVzdGVySWQxMg"


def doctor(*args: str) -> tuple[int, str]:
    result = cli.invoke(list(args), command=doctor_command)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout


def codes(out: str) -> list[str]:
    return [line.split()[1].rstrip(":") for line in out.splitlines() if line.startswith(("ERROR", "WARNING"))]


def dynamic_controllers(root: Path, ids: list[int], cluster_ids: dict[int, str] | None = None) -> dict[int, Path]:
    """Configs and directories of a dynamic quorum, formatted --initial-controllers."""
    ports = dict(zip(ids, free_ports(len(ids))))
    voters = [DynamicVoter(i, "127.0.0.1", ports[i], uuid.uuid4()) for i in ids]
    configs = {}
    for i in ids:
        directory = root / f"node-{i}"
        configs[i] = root / f"server-{i}.properties"
        configs[i].write_text(
            f"process.roles=controller\nnode.id={i}\nlisteners=CONTROLLER://127.0.0.1:{ports[i]}\n"
            "controller.listener.names=CONTROLLER\ncontroller.quorum.bootstrap.servers="
            + ",".join(f"127.0.0.1:{p}" for p in ports.values()) + f"\nmetadata.log.dir={directory}\n")
        run_format(FormatRequest(cluster_id=(cluster_ids or {}).get(i, CLUSTER_ID), node_id=i,
                                 metadata_log_dir=str(directory), log_dirs=[], initial_controllers=voters))
    return configs


def config_args(configs: dict[int, Path]) -> list[str]:
    return [a for p in configs.values() for a in ("--config", str(p))]


def real_copy(tmp_path: Path, name: str) -> Path:
    source = REAL / name
    directory = tmp_path / name
    shutil.copytree(source, directory)
    for p in [directory, *directory.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return directory


def test_three_formatted_controllers_are_healthy(tmp_path: Path) -> None:
    code, out = doctor(*config_args(dynamic_controllers(tmp_path, [1, 2, 3])))
    assert code == 0, out
    assert out.startswith("healthy: 3 directories read")


def test_the_real_kafka_quorum_directories_are_healthy() -> None:
    code, out = doctor(*[a for i in (1, 2, 3) for a in ("--dir", str(REAL / f"controller{i}"))])
    assert code == 0, out


def test_a_directory_formatted_for_another_cluster(tmp_path: Path) -> None:
    configs = dynamic_controllers(tmp_path, [1, 2, 3], {3: OTHER_CLUSTER})
    code, out = doctor(*config_args(configs))
    assert code == 1
    assert codes(out) == ["cluster-id-mismatch"]
    assert f"node-3 is formatted for cluster {OTHER_CLUSTER}, not {CLUSTER_ID}" in out
    assert f"kraft storage format --cluster-id {CLUSTER_ID}" in out


def test_meta_properties_that_disagree_with_the_config(tmp_path: Path) -> None:
    configs = dynamic_controllers(tmp_path, [1, 2, 3])
    text = configs[2].read_text().replace("node.id=2", "node.id=7")
    configs[2].write_text(text)
    code, out = doctor(*config_args(configs))
    assert code == 1
    assert codes(out) == ["node-id-mismatch"]
    assert "belongs to node 2, the config says 7" in out and "set node.id=2" in out


def test_static_voters_that_differ_between_nodes(tmp_path: Path) -> None:
    ports = free_ports(4)
    good = ",".join(f"{i}@127.0.0.1:{ports[i - 1]}" for i in (1, 2, 3))
    bad = good.replace(f"3@127.0.0.1:{ports[2]}", f"3@127.0.0.1:{ports[3]}")
    configs = {}
    for i in (1, 2, 3):
        configs[i] = tmp_path / f"server-{i}.properties"
        configs[i].write_text(f"process.roles=controller\nnode.id={i}\nlisteners=CONTROLLER://127.0.0.1:{ports[i - 1]}\n"
                              "controller.listener.names=CONTROLLER\n"
                              f"controller.quorum.voters={bad if i == 3 else good}\n"
                              f"metadata.log.dir={tmp_path / f'node-{i}'}\n")
        run_format(FormatRequest(cluster_id=CLUSTER_ID, node_id=i, metadata_log_dir=str(tmp_path / f"node-{i}"),
                                 log_dirs=[]))
    code, out = doctor(*config_args(configs))
    assert code == 1
    assert codes(out) == ["static-voters-differ"]
    assert "server-3.properties differs" in out and f"set controller.quorum.voters={good}" in out


def test_an_even_number_of_voters(tmp_path: Path) -> None:
    code, out = doctor(*config_args(dynamic_controllers(tmp_path, [1, 2])))
    assert code == 10, out
    assert codes(out) == ["even-voter-count"]
    assert "2 voters tolerate no more failures than 1" in out


def test_a_voter_whose_directory_id_is_not_the_voter_set_s(tmp_path: Path) -> None:
    """Node 3's disk was replaced and formatted again (a new directory id);
    it fetched the log, whose voter set still names its old directory id."""
    configs = dynamic_controllers(tmp_path, [1, 2, 3])
    node3 = tmp_path / "node-3"
    shutil.rmtree(node3)
    run_format(FormatRequest(cluster_id=CLUSTER_ID, node_id=3, metadata_log_dir=str(node3), log_dirs=[]))
    shutil.copytree(tmp_path / "node-1" / "__cluster_metadata-0", node3 / "__cluster_metadata-0")
    code, out = doctor(*config_args(configs))
    assert code == 1
    assert codes(out) == ["directory-id-mismatch"]
    assert "node 3's directory id is not the one in the voter set" in out and "remove-controller --controller-id 3" in out


def test_a_torn_tail_is_a_warning_and_a_corrupt_batch_an_error(tmp_path: Path) -> None:
    directory = real_copy(tmp_path, "controller1")
    segment = directory / "__cluster_metadata-0" / "00000000000000000000.log"
    original = segment.read_bytes()
    segment.write_bytes(original + original[-40:-10])
    code, out = doctor("--dir", str(directory))
    assert code == 10 and codes(out) == ["torn-tail"], out
    assert f"position={len(original)}" in out
    damaged = bytearray(original)
    damaged[len(damaged) // 2] ^= 0xFF
    segment.write_bytes(bytes(damaged))
    code, out = doctor("--dir", str(directory))
    assert code == 1 and codes(out) == ["corrupt-batch"], out
    assert "CRC mismatch" in out


def test_a_snapshot_far_behind_the_log_end(tmp_path: Path) -> None:
    directory = real_copy(tmp_path, "controller1")
    code, out = doctor("--dir", str(directory), "--max-bytes-since-snapshot", "1000")
    assert code == 10 and codes(out) == ["snapshot-far-behind"], out
    assert "latest_snapshot_offset=358" in out and "log_end_offset=514" in out


def test_a_disk_nearly_full(tmp_path: Path) -> None:
    mount = tmp_path / "small"
    mount.mkdir()
    try:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], check=True,
                       capture_output=True)
    except (subprocess.CalledProcessError, FileNotFoundError) as e:
        pytest.skip(f"cannot mount a tmpfs here: {getattr(e, 'stderr', e)!r}")
    try:
        configs = dynamic_controllers(mount, [1])
        code, out = doctor(*config_args(configs))
        assert code == 0, out
        with (mount / "filler").open("wb") as f:
            try:
                while True:
                    f.write(b"\0" * 65536)
                    f.flush()
            except OSError:
                pass  # ENOSPC: the disk is full
        code, out = doctor(*config_args(configs))
        assert code == 1 and codes(out) == ["disk-nearly-full"], out
        assert "is 100.0% full" in out
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_json_lists_the_findings_and_the_status(tmp_path: Path) -> None:
    configs = dynamic_controllers(tmp_path, [1, 2, 3], {3: OTHER_CLUSTER})
    code, out = doctor(*config_args(configs), "--json")
    doc = json.loads(out)
    assert code == 1 and doc["status"] == 1
    assert [f["code"] for f in doc["findings"]] == ["cluster-id-mismatch"]
    assert doc["findings"][0]["evidence"]["cluster_id"] == OTHER_CLUSTER
    assert doc["checked"]["configs"] == [str(p) for p in configs.values()]


def test_nothing_to_check_is_a_usage_error() -> None:
    result = cli.invoke([], command=doctor_command)
    assert result.exit_code == 2 and "give --bootstrap-controller" in result.stderr


def test_a_missing_directory_and_a_partition_directory_given_by_mistake(tmp_path: Path) -> None:
    code, out = doctor("--dir", str(tmp_path / "nowhere"))
    assert code == 1 and codes(out) == ["meta-properties-unreadable"] and "reason=the directory does not exist" in out
    directory = real_copy(tmp_path, "controller1")
    code, out = doctor("--dir", str(directory / "__cluster_metadata-0"))
    assert code == 0, out
