"""``kraft doctor`` on the ``voter-endpoint-overrides`` file that ``kraft
storage recover-quorum --endpoints`` writes. It is kraft's own (Kafka has
no such file and ignores it), so an operator reading the directory must be
told what it does: while in force, which voters it redirects; once the log's
VotersRecord records the corrected endpoints, that it is inert and can be
removed. Real directories (``kraft storage format --initial-controllers``),
the real file (written by the command), the real ``kraft doctor``."""

from __future__ import annotations

import uuid
from pathlib import Path


from kraft.records.endpoint_overrides import ENDPOINT_OVERRIDES_FILE, EndpointOverride, write_endpoint_overrides
from kraft.records.state_files import random_kafka_uuid, uuid_to_kafka
from kraft.tools.doctor import doctor_command
from kraft.tools.recover_quorum import recover_quorum_command
from tests.harness import cli
from tests.harness.configs import format_node, write_configs


def _dynamic(tmp_path: Path) -> tuple[dict[int, Path], dict[int, int], Path]:
    paths, ports = write_configs(tmp_path, [1, 2, 3])
    spec = ",".join(f"{i}@127.0.0.1:{ports[i]}:{uuid_to_kafka(random_kafka_uuid())}" for i in (1, 2, 3))
    format_node(paths[1], "--initial-controllers", spec)
    return paths, ports, tmp_path / "node-1" / "__cluster_metadata-0"


def _doctor(directory: Path) -> tuple[int, list[str]]:
    result = cli.invoke(["--dir", str(directory)], command=doctor_command)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, [line for line in result.stdout.splitlines() if "endpoint-overrides" in line]


def test_overrides_in_force_are_reported_with_what_they_redirect(tmp_path: Path) -> None:
    paths, ports, partition = _dynamic(tmp_path)
    done = cli.invoke(["--config", str(paths[1]), "--endpoints", f"1@127.0.0.1:{ports[1]},2@new-2:9093", "--unsafe"],
                      command=recover_quorum_command)
    assert done.exit_code == 0, done.output
    path = partition / ENDPOINT_OVERRIDES_FILE
    code, lines = _doctor(tmp_path / "node-1")
    assert code == 10 and len(lines) == 1, lines
    assert lines[0].startswith(f"WARNING voter-endpoint-overrides: {path} (kraft's file, not Kafka's) makes this "
                               f"node dial voter 2 at new-2:9093 (the log records 127.0.0.1:{ports[2]}) instead "
                               "of the endpoints in the log's VotersRecord"), lines[0]
    assert f"rm {path} once kraft doctor says they no longer apply" in lines[0]


def test_overrides_the_log_has_caught_up_with_are_reported_as_removable(tmp_path: Path) -> None:
    """The state after a recovery: the VotersRecord records voter 2 at its
    new address, so the entry (stale endpoint old-2:9093) no longer applies."""
    _, ports, partition = _dynamic(tmp_path)
    path = write_endpoint_overrides(partition, [
        EndpointOverride(2, None, "CONTROLLER", ("old-2", 9093), "127.0.0.1", ports[2])])
    code, lines = _doctor(tmp_path / "node-1")
    assert code == 10 and lines == [
        f"WARNING voter-endpoint-overrides-superseded: {path} (kraft's file, not Kafka's) no longer applies: "
        f"voter 2: the log records 127.0.0.1:{ports[2]}; the node ignores it (file={path}) fix: rm {path}"], lines
    path.unlink()
    assert _doctor(tmp_path / "node-1") == (0, [])


def test_an_override_for_another_directory_id_is_superseded(tmp_path: Path) -> None:
    """The voter was replaced (same id, new directory): the node ignores the entry, and so must the doctor."""
    _, ports, partition = _dynamic(tmp_path)
    write_endpoint_overrides(partition, [
        EndpointOverride(3, uuid.uuid4(), "CONTROLLER", ("127.0.0.1", ports[3]), "new-3", 9093)])
    code, lines = _doctor(tmp_path / "node-1")
    assert code == 10 and len(lines) == 1 and "voter-endpoint-overrides-superseded" in lines[0], lines


def test_a_malformed_file_is_an_error_naming_it(tmp_path: Path) -> None:
    _, _, partition = _dynamic(tmp_path)
    (partition / ENDPOINT_OVERRIDES_FILE).write_text("{not json\n")
    code, lines = _doctor(tmp_path / "node-1")
    assert code == 1 and len(lines) == 1, lines
    assert lines[0].startswith(f"ERROR   endpoint-overrides-unreadable: {partition / ENDPOINT_OVERRIDES_FILE} "
                               "(kraft's file, not Kafka's) cannot be read"), lines[0]
