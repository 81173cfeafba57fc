"""The remedy line for each kind of node (each is followed end to end on
real processes in test_corruption_remedy.py)."""

from __future__ import annotations

import uuid
from pathlib import Path

from kraft.config import NodeConfig
from kraft.node.remedies import corruption_remedy
from kraft.records.errors import CorruptLogError
from kraft.records.state_files import MetaProperties, uuid_to_kafka
from tests.harness.configs import format_node

BASE = {"process.roles": "controller", "listeners": "CONTROLLER://127.0.0.1:9093",
        "controller.listener.names": "CONTROLLER", "metadata.log.dir": "/data/kraft"}
ERROR = CorruptLogError("CRC mismatch; a batch with a valid CRC follows at position 900", path=None, position=None)


def _line(props: dict[str, str], node_id: int) -> str:
    config = NodeConfig.from_properties({**BASE, **props, "node.id": str(node_id)})
    return corruption_remedy(ERROR, config, MetaProperties(1, "MkU3OEVBNTcwNTJENDM2Qg", node_id, uuid.UUID(int=7)))


def test_a_static_voter_and_an_observer_refetch_after_moving_the_directory_aside() -> None:
    voter = _line({"controller.quorum.voters": "1@127.0.0.1:9093,2@h2:9093"}, 1)
    assert "This node is a voter of a static quorum (one voter at a time): refetch the log: " \
           "`mv /data/kraft /data/kraft.corrupt`, `kraft storage format -c CONFIG -t MkU3OEVBNTcwNTJENDM2Qg`, " \
           "`kraft node start -c CONFIG`" in voter
    observer = _line({"controller.quorum.voters": "1@h1:9093", "process.roles": "broker"}, 5)
    assert "This node is an observer: refetch the log" in observer
    assert "\n" not in voter + observer


def test_a_dynamic_node_gets_the_kip_853_replacement_with_its_old_directory_id(tmp_path: Path) -> None:
    """Decided from the log: the bootstrap snapshot's VotersRecord names this directory."""
    config_path = tmp_path / "server.properties"
    config_path.write_text("".join(f"{k}={v}\n" for k, v in {
        **BASE, "metadata.log.dir": str(tmp_path / "kraft"), "node.id": "1",
        "controller.quorum.bootstrap.servers": "127.0.0.1:9093,h2:9093"}.items()))
    format_node(config_path, "--standalone")
    config = NodeConfig.load(config_path)
    meta = MetaProperties.read(tmp_path / "kraft" / "meta.properties")
    assert meta.directory_id is not None
    line = corruption_remedy(ERROR, config, meta)
    assert "Node 1 is a voter of the log's voter set (1; kraft.version 1): replace its directory (KIP-853)" in line
    assert "--no-initial-controllers`" in line
    assert f"`kraft metadata-quorum --bootstrap-controller h2:9093 remove-controller --controller-id 1 " \
           f"--controller-directory-id {uuid_to_kafka(meta.directory_id)}` and `kraft metadata-quorum " \
           f"--bootstrap-controller h2:9093 --command-config {config_path} add-controller`" in line
    assert Path(line.split("`")[1].split()[1]) == tmp_path / "kraft"


def test_a_dynamic_node_the_log_does_not_list_as_a_voter_refetches_as_an_observer() -> None:
    """No VotersRecord names this directory (here: no log at all): an observer."""
    line = _line({"controller.quorum.bootstrap.servers": "127.0.0.1:9093,h2:9093"}, 1)
    assert "This node is an observer: refetch the log: " in line
    assert "--no-initial-controllers`" in line and "remove-controller" not in line
