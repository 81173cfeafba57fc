"""``kraft.controller``: when a ``process.roles=controller`` node runs
Kafka's controller. ``auto`` (the default) runs it, as Kafka's
``KafkaRaftServer`` starts a ``ControllerServer`` for that role, except
where kraft's other roles need the node to stay a raft quorum member only:
a witness (``kraft.witness=true``, or voters found to be Kafka
controllers), and a log of records that are not Kafka metadata (a
replicated log of one's own records). Each says so in one INFO line."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from kraft.config import ConfigError, ControllerMode, NodeConfig
from kraft.node.fault import RaisingFaultHandler
from kraft.node.node import KraftNode
from kraft.raft.errors import NotLeaderError
from tests.harness.configs import load, make_configs
from tests.harness.inprocess import leader_of, node_config
from tests.harness.poll import until_async
from tests.node.broker_channel import BrokerChannel, registration


async def _register(port: int) -> Any:
    """A BrokerRegistration (v4) as a broker sends it; the decoded answer."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    try:
        return await BrokerChannel(stream).ask(registration(10, 1), 4)
    finally:
        await stream.aclose()


def test_the_default_is_auto_and_a_mistyped_value_is_named(tmp_path: Path) -> None:
    config = load(make_configs(tmp_path, [1])[1])
    assert config.controller is ControllerMode.AUTO
    with pytest.raises(ConfigError, match=r"kraft.controller must be auto, true or false, not 'yes'"):
        NodeConfig.from_properties({**config.raw, "kraft.controller": "yes"})


def test_kraft_node_start_runs_kafkas_controller_by_default(tmp_path: Path) -> None:
    """No kraft.controller key: `kraft node start` with process.roles=controller
    on a formatted directory registers a broker, as Kafka's controller does
    (ClusterControlManager.registerBroker)."""
    paths = make_configs(tmp_path, [1])
    port = int(load(paths[1]).listeners[0].port)
    log = tmp_path / "node.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "kraft.cli", "node", "start", "--config", str(paths[1])],
                                stdout=out, stderr=subprocess.STDOUT)
    try:
        async def register() -> Any:
            async def registered() -> Any:
                try:
                    answer = await _register(port)
                except OSError:  # not listening yet
                    return None
                return answer if answer.error_code != 41 else None  # NOT_CONTROLLER until it has activated

            with trio.fail_after(60):
                return await until_async("the controller to answer a registration", registered, interval_s=0.1)

        answer = trio.run(register)
        assert answer.error_code == 0 and answer.broker_epoch > 0, (answer, log.read_text())
    finally:
        proc.terminate()
        proc.wait(30)


async def test_a_log_of_other_records_stands_the_controller_down_in_one_line(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """auto on a log that holds records that are not Kafka metadata (here
    appended through the embedding API before): the controller stands down
    with one INFO line, no ERROR, and the node goes on committing."""
    caplog.set_level(logging.INFO, logger="kraft")
    paths = make_configs(tmp_path, [1])
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            raw = KraftNode(node_config(paths[1]), fault_handler=RaisingFaultHandler())
            await nursery.start(raw.run)
            await leader_of([raw])
            await raw.append([b"my own record"])
            await raw.shutdown()
            node = KraftNode(node_config(paths[1]), fault_handler=RaisingFaultHandler(), controller=ControllerMode.AUTO)
            await nursery.start(node.run)
            assert node.controller is not None
            await node.controller.stopped.wait()
            await leader_of([node])
            offset = None
            while offset is None:
                try:
                    offset = await node.append([b"still a replicated log"])
                except NotLeaderError:
                    await trio.sleep(0.05)
            assert not node.controller.is_active
            await node.shutdown()
    said = [r for r in caplog.records if "not Kafka metadata records" in r.getMessage()]
    assert len(said) == 1 and said[0].levelno == logging.INFO, [r.getMessage() for r in said]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_a_witness_runs_no_controller(tmp_path: Path) -> None:
    """kraft.witness=true: the node never leads, so it runs raft only."""
    paths = make_configs(tmp_path, [1, 2, 3], extra={"kraft.witness": "true"})
    node = KraftNode(load(paths[1]), controller=ControllerMode.AUTO)

    async def start() -> None:
        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:
                await nursery.start(node.run)
                assert node.controller is None
                await node.shutdown()

    trio.run(start)


async def test_voters_that_are_kafka_controllers_stand_the_controller_down(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Beside Kafka's controllers (here a node answering ApiVersions as a
    real Kafka 4.0 controller does) a kraft voter is a witness, as before it
    had a controller: under auto its controller stands down, in one line."""
    from tests.node.kafka_played import KAFKA_4_0_CONTROLLER_APIS

    caplog.set_level(logging.INFO, logger="kraft")
    paths = make_configs(tmp_path, [1, 2])
    kafka_config = NodeConfig.from_properties({**load(paths[2]).raw, "kraft.witness": "false"})
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            kafka = KraftNode(kafka_config, advertised_apis=KAFKA_4_0_CONTROLLER_APIS)
            witness = KraftNode(node_config(paths[1]), controller=ControllerMode.AUTO)
            await nursery.start(kafka.run)
            await nursery.start(witness.run)
            assert witness.controller is not None
            await witness.controller.stopped.wait()
            await until_async("the witness's decision to be a witness",
                              lambda: witness.witness_decision is not None and witness.witness_decision.witness,
                              interval_s=0.05)
            assert not witness.controller.is_active
            await kafka.shutdown()
            await witness.shutdown()
    said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Not running Kafka's controller")]
    assert said == ["Not running Kafka's controller: voters 2 are Kafka controllers: a witness beside them runs the "
                    "raft quorum only (kraft.controller=auto)."]
