"""check_reachable (kraft.admin_client.reach): the tools' TCP probe of the
bootstrap servers before the slower machinery starts."""

from __future__ import annotations

import socket

import pytest

from kraft.admin_client.errors import UnreachableError
from kraft.admin_client.reach import check_reachable
from tests.ports import free_port

HOST = "127.0.0.1"


def test_a_listening_address_is_reachable() -> None:
    with socket.create_server((HOST, 0)) as server:
        check_reachable([(HOST, server.getsockname()[1])], 2)


def test_a_connection_to_itself_is_not_reachable_but_refused() -> None:
    """Binding the probe to the port it dials connects the socket to itself
    (the kernel may do so by itself for a port in its ephemeral range): no
    node answers there, so it reads exactly as a refused address."""
    port = free_port()
    expected = (f"Cannot reach any of the bootstrap controllers: {HOST}:{port} (connection refused); "
                "check --bootstrap-controller and that the controllers are running")
    with pytest.raises(UnreachableError) as itself:
        check_reachable([(HOST, port)], 2, source_port=port)
    assert str(itself.value) == expected
    with pytest.raises(UnreachableError) as plain:
        check_reachable([(HOST, port)], 2)
    assert str(plain.value) == expected
