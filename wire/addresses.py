"""The one parser of bootstrap address lists: Kafka's
``ClientUtils.parseAndValidateAddresses``, which Kafka uses for
``bootstrap.servers``, ``bootstrap.controllers`` and
``controller.quorum.bootstrap.servers`` (``QuorumConfig.parseBootstrapServers``).

Comma-separated ``host:port``; IPv6 hosts in brackets (``[::1]:9093``);
blanks around items and empty items are ignored. The node's config
(:mod:`kraft.config`) and every client (:func:`kraft.admin_client.admin.parse_bootstrap`:
the tools and the observer) parse with :func:`parse_addresses` and only
choose the name the error messages give the setting.
"""

from __future__ import annotations

import re

__all__ = ["InvalidAddress", "format_address", "parse_addresses"]

_HOST_PORT = re.compile(r"\[([^\]]+)\]:(\d+)|([^:\[\]\s]+):(\d+)")


class InvalidAddress(ValueError):
    """An address list Kafka would refuse; the message is Kafka's."""


def parse_addresses(text: str, config_key: str, *, allow_empty: bool = False) -> tuple[tuple[str, int], ...]:
    """``(host, port)`` pairs of ``text``. Raises :class:`InvalidAddress`
    with Kafka's message ("Invalid url in KEY: ITEM", "No resolvable
    bootstrap urls given in KEY") naming ``config_key``; an empty list is
    refused unless ``allow_empty``."""
    out = []
    for item in (s.strip() for s in text.split(",")):
        if not item:
            continue
        m = _HOST_PORT.fullmatch(item)
        port = int(m.group(2) or m.group(4)) if m else -1
        if m is None or not 0 < port < 65536:
            raise InvalidAddress(f"Invalid url in {config_key}: {item}")
        out.append((m.group(1) or m.group(3), port))
    if not out and not allow_empty:
        raise InvalidAddress(f"No resolvable bootstrap urls given in {config_key}")
    return tuple(out)


def format_address(host: str, port: int) -> str:
    """``host:port`` as :func:`parse_addresses` reads it back: an IPv6 host in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
