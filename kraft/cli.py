"""The `kraft` command line."""

from __future__ import annotations

import click


@click.group()
@click.version_option(package_name="kraft")
def main() -> None:
    """kraft: a Kafka-wire-compatible KRaft node, codecs and metadata-log tools."""
