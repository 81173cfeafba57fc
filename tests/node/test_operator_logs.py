"""What an operator reads at INFO: state changes, not traffic. Connections
and admin requests (a `kraft quorum describe` loop, a monitoring probe) are
DEBUG lines; at DEBUG they are all there."""

from __future__ import annotations

import io
import logging
from pathlib import Path

import pytest
import trio

from kraft.config import NodeConfig
from kraft.messages.generated import describe_quorum_request as dq_req
from kraft.tools.storage import FormatRequest, run_format
from kraft.wire.apis import ApiKey
from tests.harness.inprocess import peer, start
from tests.node.test_start_failures import write_config
from tests.ports import free_port


def _request() -> dq_req.DescribeQuorumRequest:
    return dq_req.DescribeQuorumRequest(topics=[dq_req.TopicData(
        topic_name="__cluster_metadata", partitions=[dq_req.PartitionData(partition_index=0)])])


async def _describe_many(tmp_path: Path, times: int) -> None:
    path = write_config(tmp_path, free_port())
    run_format(FormatRequest(cluster_id="MkU3OEVBNTcwNTJENDM2Qg", node_id=1,
                             metadata_log_dir=str(tmp_path / "data"), log_dirs=[]), out=io.StringIO())
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            node = await start(nursery, NodeConfig.load(path))
            for _ in range(times):
                client = peer(node)  # a new connection each time, as a CLI loop makes
                try:
                    await client.request(ApiKey.DESCRIBE_QUORUM, lambda v: _request())
                finally:
                    await client.aclose()
            await node.shutdown()


@pytest.mark.parametrize("level", [logging.INFO, logging.DEBUG])
async def test_connections_and_admin_requests_are_debug_lines(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, level: int) -> None:
    caplog.set_level(level)
    await _describe_many(tmp_path, 10)
    traffic = [r for r in caplog.records if "DescribeQuorum" in r.getMessage()]
    if level == logging.INFO:
        assert traffic == []
        assert any("listening on" in r.getMessage() for r in caplog.records)  # state changes still are INFO
    else:
        assert len(traffic) == 10 and all(r.levelno == logging.DEBUG for r in traffic)
