"""The one bootstrap-address parser (Kafka's ``ClientUtils.parseAndValidateAddresses``)
and its two wrappers: the node's config (``controller.quorum.bootstrap.servers``)
and every client's (:func:`kraft.admin_client.admin.parse_bootstrap`: the tools and
the observer)."""

from __future__ import annotations

import pytest

from kraft.admin_client.admin import parse_bootstrap
from kraft.admin_client.errors import AdminError
from kraft.config import ConfigError, parse_bootstrap_servers
from kraft.programs.observer import Observer, ObserverError
from kraft.wire.addresses import InvalidAddress, parse_addresses


def test_host_port_lists_with_ipv6_and_blanks() -> None:
    assert parse_addresses(" a:1, ,[::1]:9093,b.example:65535 ", "bootstrap.servers") == (
        ("a", 1), ("::1", 9093), ("b.example", 65535))


@pytest.mark.parametrize("text,message", [
    ("nohost", "Invalid url in bootstrap.servers: nohost"),
    ("h:0", "Invalid url in bootstrap.servers: h:0"),
    ("h:65536", "Invalid url in bootstrap.servers: h:65536"),
    (":9093", "Invalid url in bootstrap.servers: :9093"),
    (" , ", "No resolvable bootstrap urls given in bootstrap.servers"),
])
def test_kafka_refusals(text: str, message: str) -> None:
    with pytest.raises(InvalidAddress) as e:
        parse_addresses(text, "bootstrap.servers")
    assert str(e.value) == message


def test_every_user_parses_alike() -> None:
    text = "127.0.0.1:9093,[::1]:9094"
    expected = [("127.0.0.1", 9093), ("::1", 9094)]
    assert parse_bootstrap_servers(text) == expected
    assert list(parse_bootstrap(text, "bootstrap.controllers")) == expected
    assert list(parse_bootstrap(text.split(","), "--bootstrap-controller")) == expected  # an option given twice
    assert Observer(text).bootstrap == Observer(text.split(",")).bootstrap == expected
    # Each names its own setting in Kafka's message, with its own error type.
    with pytest.raises(ConfigError, match="^Invalid url in controller.quorum.bootstrap.servers: x$"):
        parse_bootstrap_servers("x")
    with pytest.raises(AdminError, match="^Invalid url in bootstrap.controllers: x$"):
        parse_bootstrap("x", "bootstrap.controllers")
    with pytest.raises(ObserverError, match="^Invalid url in --bootstrap-controller: x$"):
        Observer("x")
    assert parse_bootstrap_servers("") == []  # a static quorum has none
