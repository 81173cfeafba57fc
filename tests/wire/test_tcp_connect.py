"""Outbound connections (kraft.wire.tcp_connect): a connection to itself is
a refused one. Forced by binding the client end to the port it dials, which
is what the kernel may pick by itself for a port in its ephemeral range
(TCP simultaneous open)."""

from __future__ import annotations

import errno
import socket

import pytest
import trio

from kraft.wire.tcp_connect import connect, connected_to_itself, open_tcp_stream
from tests.ports import free_port
from tests.wire.netutil import HOST, TEST_TIMEOUT_S


def test_a_blocking_connection_to_itself_is_refused() -> None:
    port = free_port()
    with pytest.raises(ConnectionRefusedError) as caught:
        connect(HOST, port, 2, source_port=port)
    assert caught.value.errno == errno.ECONNREFUSED


def test_a_connection_to_a_listener_is_not_to_itself() -> None:
    with socket.create_server((HOST, 0)) as server:
        with connect(HOST, server.getsockname()[1], 2) as client, server.accept()[0]:
            assert not connected_to_itself(client)


async def test_a_trio_connection_to_itself_is_refused() -> None:
    port = free_port()
    with trio.fail_after(TEST_TIMEOUT_S):
        with pytest.raises(ConnectionRefusedError) as caught:
            await open_tcp_stream(HOST, port, source_port=port)
    assert caught.value.errno == errno.ECONNREFUSED


async def test_a_trio_connection_nobody_accepts_is_refused() -> None:
    with trio.fail_after(TEST_TIMEOUT_S):
        with pytest.raises(ConnectionRefusedError):
            await open_tcp_stream(HOST, free_port())
