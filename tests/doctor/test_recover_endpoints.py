"""``kraft storage recover-quorum --endpoints``: the plan, the refusals (one
line naming the cause and the fix, nothing written) and the override file the
node reads (:class:`kraft.node.network_channel.AddressBook`). The end-to-end
run with real processes is tests/node/test_recover_endpoints_processes.py."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from kraft.node.network_channel import AddressBook
from kraft.records.endpoint_overrides import ENDPOINT_OVERRIDES_FILE, EndpointOverride, read_endpoint_overrides
from kraft.records.errors import StateFileError
from kraft.records.state_files import random_kafka_uuid, uuid_to_kafka
from kraft.tools.recover_quorum import recover_quorum_command
from tests.harness import cli
from tests.harness.configs import format_node, write_configs


def _dynamic(tmp_path: Path) -> tuple[dict[int, Path], dict[int, int]]:
    paths, ports = write_configs(tmp_path, [1, 2, 3])
    spec = ",".join(f"{i}@127.0.0.1:{ports[i]}:{uuid_to_kafka(random_kafka_uuid())}" for i in (1, 2, 3))
    format_node(paths[1], "--initial-controllers", spec)
    return paths, ports


def _run(config: Path, *args: str) -> tuple[int, str, str]:
    result = cli.invoke(["--config", str(config), *args], command=recover_quorum_command)
    return result.exit_code, result.stdout, result.stderr


def test_the_plan_names_each_voter_s_stale_and_new_endpoint_and_writes_nothing(tmp_path: Path) -> None:
    paths, ports = _dynamic(tmp_path)
    own = f"1@127.0.0.1:{ports[1]}"
    code, out, err = _run(paths[1], "--endpoints", f"{own},2@new-2:9093,3@new-3:9093")
    assert code == 0, err
    assert f"voter 2 at CONTROLLER://new-2:9093 (the log records 127.0.0.1:{ports[2]})" in out
    assert "voter 1 " not in out  # its endpoint is already the recorded one
    assert out.rstrip().endswith("Nothing was changed. Run again with --unsafe to carry out this plan.")
    assert not (tmp_path / "node-1" / "__cluster_metadata-0" / ENDPOINT_OVERRIDES_FILE).exists()


@pytest.mark.parametrize(("endpoints", "expected"), [
    ("2@new-2", "is not ID@HOST:PORT"),
    ("2@new-2:9093,2@other:9093", "voter 2 is listed twice"),
    ("7@new-7:9093", "names 7, not voter(s) of this log"),
    ("1@elsewhere:9093", "this node) elsewhere:9093, but its CONTROLLER listener"),
])
def test_refusals_are_one_line_and_change_nothing(tmp_path: Path, endpoints: str, expected: str) -> None:
    paths, _ = _dynamic(tmp_path)
    code, out, err = _run(paths[1], "--endpoints", endpoints, "--unsafe")
    assert code == 1 and out == ""
    assert len(err.strip().splitlines()) == 1 and expected in err, err
    assert not (tmp_path / "node-1" / "__cluster_metadata-0" / ENDPOINT_OVERRIDES_FILE).exists()
    assert not list(tmp_path.glob("node-1.recover-quorum-backup-*"))


def test_a_static_quorum_is_told_to_edit_controller_quorum_voters(tmp_path: Path) -> None:
    paths, _ = write_configs(tmp_path, [1], extra={"controller.quorum.voters": "1@127.0.0.1:9093"})
    text = paths[1].read_text().replace("controller.quorum.bootstrap.servers", "#")
    paths[1].write_text(text)
    cli.run("storage", "format", "--config", str(paths[1]), "--cluster-id", "MkU3OEVBNTcwNTJENDM2Qk", check=True)
    code, _, err = _run(paths[1], "--endpoints", "1@127.0.0.1:9093")
    assert code == 1 and "static quorum" in err and "controller.quorum.voters" in err, err


def test_the_override_applies_only_while_the_voter_set_records_the_stale_endpoint() -> None:
    from kraft.raft.voters import Endpoint, ReplicaKey, VoterNode, VoterSet

    directory = uuid.uuid4()
    override = EndpointOverride(2, directory, "CONTROLLER", ("old-2", 9093), "new-2", 9093)

    class Core:
        voters = VoterSet.of([VoterNode(ReplicaKey(2, directory), (Endpoint("CONTROLLER", "old-2", 9093),))])

    book = AddressBook("CONTROLLER", {}, {}, [override])
    assert book.address_of(2) == ("new-2", 9093)  # before the core exists
    book.quorum = Core()  # type: ignore[assignment]
    assert book.address_of(2) == ("new-2", 9093)
    # The leader recorded the voter's UpdateRaftVoter: the log wins again.
    Core.voters = VoterSet.of([VoterNode(ReplicaKey(2, directory), (Endpoint("CONTROLLER", "newer-2", 9094),))])
    assert book.address_of(2) == ("newer-2", 9094)
    # Another directory id under that id (a re-formatted disk): not the voter the operator named.
    Core.voters = VoterSet.of([VoterNode(ReplicaKey(2, uuid.uuid4()), (Endpoint("CONTROLLER", "old-2", 9093),))])
    assert book.address_of(2) == ("old-2", 9093)


def test_a_malformed_override_file_names_itself(tmp_path: Path) -> None:
    (tmp_path / ENDPOINT_OVERRIDES_FILE).write_text('{"version": 0, "overrides": [{"id": 1}]}')
    with pytest.raises(StateFileError, match=ENDPOINT_OVERRIDES_FILE):
        read_endpoint_overrides(tmp_path)
