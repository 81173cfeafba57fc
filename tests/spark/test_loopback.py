"""A local master's driver binds loopback (issue 26): on a laptop a
``kraft spark`` run must open no port on the machine's public interface.
Spark's default is the address the host name resolves to, else the first
interface's (``Utils.findLocalInetAddress``: "using <address> instead")."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any

import pytest

from kraft.tools.spark import source


def _listening_addresses(port: int) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """The local addresses of the sockets listening on ``port`` (/proc/net/tcp and tcp6)."""
    out: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = []
    for name, size in (("tcp", 4), ("tcp6", 16)):
        path = Path("/proc/net") / name
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            address, _, port_hex = fields[1].partition(":")
            if int(port_hex, 16) != port or fields[3] != "0A":  # 0A: LISTEN
                continue
            raw = bytes.fromhex(address)
            # /proc prints each 32-bit word in host (little-endian) order.
            ordered = b"".join(raw[i:i + 4][::-1] for i in range(0, size, 4))
            ip = ipaddress.ip_address(ordered)
            if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
                ip = ip.ipv4_mapped
            out.append(ip)
    return out


def test_the_local_driver_listens_on_loopback_only(spark: Any) -> None:
    assert spark.conf.get("spark.driver.bindAddress") == "127.0.0.1"
    assert spark.conf.get("spark.driver.host") == "127.0.0.1"
    port = int(spark.sparkContext.getConf().get("spark.driver.port"))
    addresses = _listening_addresses(port)
    assert addresses, f"nothing listens on the driver port {port}"
    assert all(a.is_loopback for a in addresses), addresses


def test_what_the_user_configured_wins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("SPARK_LOCAL_IP", raising=False)
    monkeypatch.delenv("SPARK_LOCAL_HOSTNAME", raising=False)
    monkeypatch.delenv("SPARK_HOME", raising=False)
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    loopback = {"spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1"}
    assert source.loopback_settings({}) == loopback
    assert source.loopback_settings({"spark.driver.host": "10.1.2.3"}) == {}
    assert source.loopback_settings({"spark.driver.bindAddress": "0.0.0.0"}) == {}
    (tmp_path / "spark-defaults.conf").write_text("# site settings\nspark.driver.host   node7.example\n")
    assert source.loopback_settings({}) == {}
    (tmp_path / "spark-defaults.conf").write_text("spark.executor.memory 2g\n")
    assert source.loopback_settings({}) == loopback
    monkeypatch.setenv("SPARK_LOCAL_IP", "192.0.2.7")
    assert source.loopback_settings({}) == {}
