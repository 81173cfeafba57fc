"""``kraft node status``: one look at a running node, from its metrics port
(``GET /status``, see :mod:`kraft.node.metrics_endpoint`): its raft state,
health and readiness, and Kafka's raft-metrics gauges."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from kraft.tools.cli_types import TIMEOUT_S

__all__ = ["status_command", "fetch_status"]


def fetch_status(host: str, port: int, timeout_s: float = 5.0) -> dict[str, Any]:
    """The node's ``/status`` document; raises
    :class:`kraft.admin_client.errors.UnreachableError` (exit 5, one line naming
    the address and why) when the node cannot be asked."""
    import socket
    import urllib.error
    import urllib.request

    from kraft.admin_client.errors import UnreachableError
    from kraft.wire.addresses import format_address

    url = f"http://{format_address(host, port)}/status"
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:  # noqa: S310 (http only, our URL)
            return json.loads(response.read())
    except urllib.error.HTTPError as e:
        why = f"HTTP {e.code} {e.reason}: not a kraft metrics endpoint?"
    except urllib.error.URLError as e:
        reason = e.reason
        why = (reason.strerror or str(reason)) if isinstance(reason, OSError) else str(reason)
    except (TimeoutError, socket.timeout):
        why = f"no answer within {timeout_s:g} s"
    except (OSError, ValueError) as e:
        why = f"not a kraft status document ({type(e).__name__}: {e})"
    raise UnreachableError(f"cannot read {url}: {why} (is the node running, with metrics.prometheus.port "
                           "set to that port?)")


def _address(config_path: Path | None, address: str | None) -> tuple[str, int]:
    if address is not None:
        host, sep, port = address.rpartition(":")
        if not sep or not port.isdigit():
            raise click.BadParameter(f"expected HOST:PORT, got {address!r}", param_hint="--metrics-address")
        return host.strip("[]") or "127.0.0.1", int(port)
    if config_path is None:
        raise click.UsageError("give --config or --metrics-address")
    from kraft.config import ConfigError, NodeConfig

    # A bad config is the CLI's one line and exit code 3 (ConfigError), as in every tool.
    config = NodeConfig.load(config_path)
    if not config.prometheus_port:
        raise ConfigError(
            f"{config_path}: metrics.prometheus.port is not set (or 0): the node has no fixed metrics port")
    host = config.prometheus_host
    return ("127.0.0.1" if host in ("", "0.0.0.0", "::") else host), config.prometheus_port


def status_text(status: dict[str, Any]) -> str:
    m = status.get("raft_metrics", {})
    lines = [
        f"node {status['node_id']} of cluster {status['cluster_id']}: {m.get('current-state', 'starting')} "
        f"in epoch {m.get('current-epoch', '-')}, leader {m.get('current-leader', '-')}",
        f"voters {status['voters']}",
        *([f"kraft.witness: {status['witness']}"] if status.get("witness") else []),
        f"healthy: {'yes' if status['healthy'] else 'NO'} ({status['health']})",
        f"ready: {'yes' if status['ready'] else 'NO'} ({status['readiness']})",
        "raft-metrics:",
    ]
    width = max((len(k) for k in m), default=0)
    lines += [f"  {k:<{width}}  {'NaN' if v is None else v}" for k, v in m.items()]
    return "\n".join(lines)


@click.command("status")
@click.option("--config", "-c", "config_path", type=click.Path(path_type=Path), default=None,
              help="The node's server.properties: metrics.prometheus.port (and .host) say where to ask.")
@click.option("--metrics-address", metavar="HOST:PORT", default=None,
              help="The node's metrics endpoint, instead of --config.")
@click.option("--json", "as_json", is_flag=True, help="Print the status document as JSON.")
@click.option("--timeout", "timeout_s", type=TIMEOUT_S, default=5.0, show_default=True, help="Seconds to wait.")
def status_command(config_path: Path | None, metrics_address: str | None, as_json: bool, timeout_s: float) -> None:
    """Show a running node's raft state, health and readiness (one request to
    its metrics port, metrics.prometheus.port). Exit code 0 if the node is
    ready, 10 if it answered but is not ready, 5 if it cannot be asked."""
    from kraft.errors import EXIT_TOOL_FIRST

    host, port = _address(config_path, metrics_address)
    status = fetch_status(host, port, timeout_s)
    click.echo(json.dumps(status, indent=2, sort_keys=True) if as_json else status_text(status))
    if not status.get("ready"):
        raise SystemExit(EXIT_TOOL_FIRST)  # the tool's own outcome, clear of the shared codes (2 is usage)
