"""``kraft doctor``'s fixes (issue 26): every finding names its fix, a
directory given twice is read once, and a dynamic voter's corrupt log gets
the whole way back (remove-controller, format, add-controller)."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import kraft.doctor
from kraft.records.state_files import MetaProperties, uuid_to_kafka
from tests.doctor.test_doctor_offline import codes, config_args, doctor, dynamic_controllers, real_copy
from tests.harness import cli


def test_every_finding_the_doctor_builds_has_a_fix() -> None:
    """Each ``Finding(...)`` in kraft/doctor passes a fix (the fifth argument or ``fix=``)."""
    package = Path(kraft.doctor.__file__).parent
    missing = []
    for path in sorted(package.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Finding":
                has_fix = len(node.args) >= 5 or any(k.arg == "fix" for k in node.keywords)
                if not has_fix:
                    missing.append(f"{path.name}:{node.lineno}")
    assert not missing, f"findings without a fix: {missing}"


def test_an_empty_directory_gets_the_format_command_as_its_fix(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    code, out = doctor("--dir", str(empty))
    assert code == 1 and codes(out) == ["meta-properties-unreadable"], out
    assert "fix: kraft storage format" in out and "--cluster-id" in out, out


def test_an_unreadable_config_gets_a_fix(tmp_path: Path) -> None:
    bad = tmp_path / "bad.properties"
    bad.write_text("node.id=one\nmetadata.log.dir=" + str(tmp_path / "d") + "\n")
    code, out = doctor("--config", str(bad))
    assert code == 1 and "config-unreadable" in codes(out), out
    line = next(line for line in out.splitlines() if "config-unreadable" in line)
    assert "fix: " in line and "node.id" in line, line


def test_a_missing_config_is_named_as_missing_not_as_lacking_a_key(tmp_path: Path) -> None:
    code, out = doctor("--config", str(tmp_path / "nowhere.properties"))
    assert code == 1 and codes(out) == ["config-unreadable"], out
    assert "No such file or directory" in out and "names no metadata.log.dir" not in out, out
    assert "fix: give the path of the controller's server.properties" in out, out


def test_a_directory_given_by_dir_and_by_config_is_read_once(tmp_path: Path) -> None:
    configs = dynamic_controllers(tmp_path, [1, 2, 3])
    # The same directory spelled another way: relative, through "..".
    other_spelling = os.path.relpath(tmp_path / "node-2" / ".." / "node-1")
    code, out = doctor("--dir", other_spelling, *config_args(configs))
    assert code == 0, out
    assert out.strip().endswith("healthy: 3 directories read"), out
    code, out = doctor("--dir", str(tmp_path / "node-1"), "--dir", str(tmp_path / "node-1" / "__cluster_metadata-0"))
    assert code == 0 and out.strip().endswith("healthy: 1 directory read"), out


def test_a_corrupt_batch_on_a_dynamic_voter_names_remove_and_add_controller(tmp_path: Path) -> None:
    """Re-fetching gives the node a new directory id (a fresh format), so the
    voter set must drop the old (id, directory id) and take the new one:
    KIP-853's remove-controller and add-controller."""
    directory = real_copy(tmp_path, "controller1")
    segment = directory / "__cluster_metadata-0" / "00000000000000000000.log"
    damaged = bytearray(segment.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    segment.write_bytes(bytes(damaged))
    code, out = doctor("--dir", str(directory))
    assert code == 1 and codes(out) == ["corrupt-batch"], out
    meta = MetaProperties.read(directory / "meta.properties")
    assert meta.directory_id is not None
    fix = out.split(" fix: ", 1)[1]
    remove = fix.index(f"remove-controller --controller-id 1 --controller-directory-id {uuid_to_kafka(meta.directory_id)}")
    fmt = fix.index("kraft storage format")
    add = fix.index("add-controller")
    assert fmt < remove < add, fix  # KIP-853: the new directory catches up as an observer first
    assert "--no-initial-controllers" in fix and f"--cluster-id {meta.cluster_id}" in fix, fix
    # The other voters' endpoints (from the VotersRecord) are the bootstrap of the commands.
    assert "--bootstrap-controller 127.0.0.1:21192,127.0.0.1:21193" in fix, fix


def test_registered_controllers_that_are_no_longer_voters_are_named(tmp_path: Path) -> None:
    """Kafka 4.0's controller 1 after a recover-quorum: voters [1], but the
    image still holds the RegisterControllerRecords of 1, 2 and 3."""
    from kraft.tools.recover_quorum import recover_quorum_command

    directory = real_copy(tmp_path, "controller1")
    code, out = doctor("--dir", str(directory))
    assert code == 0, out  # voters 1, 2, 3 are the registered controllers: no ghost
    config = tmp_path / "c1.properties"
    config.write_text("process.roles=controller\nnode.id=1\nlisteners=CONTROLLER://127.0.0.1:1\n"
                      "controller.listener.names=CONTROLLER\ncontroller.quorum.bootstrap.servers=127.0.0.1:1\n"
                      f"metadata.log.dir={directory}\n")
    done = cli.invoke(["--config", str(config), "--unsafe", "--offline"], command=recover_quorum_command)
    assert done.exit_code == 0, done.output
    code, out = doctor("--dir", str(directory))
    assert code == 10 and codes(out) == ["ghost-controller-registration"], out
    assert "controllers 2, 3 are registered but not a voter" in out, out
    assert "Kafka 4.0-4.3" in out and "--no-initial-controllers" in out and "kafka-cluster.sh unregister" in out
