"""``kraft storage``: Kafka's ``kafka-storage.sh`` (random-uuid, format,
info). The command only; what it does is in :mod:`kraft.tools.storage`,
imported when a subcommand runs so ``--help`` answers at once."""

from __future__ import annotations

import sys

import click

__all__ = ["storage_group"]


def _parse_host_port(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise click.BadParameter(f"expected HOST:PORT, got {text!r}")
    return host.strip("[]"), int(port)


@click.group("storage", short_help="Format and inspect log directories (kafka-storage.sh).")
def storage_group() -> None:
    """The Kafka storage tool (kafka-storage.sh)."""


@storage_group.command("random-uuid")
def random_uuid_command() -> None:
    """Print a random UUID."""
    from kraft.records.state_files import random_kafka_uuid, uuid_to_kafka

    click.echo(uuid_to_kafka(random_kafka_uuid()))


@storage_group.command("format")
@click.option("--config", "-c", "config_path", help="The Kafka configuration file to use.")
@click.option("--cluster-id", "-t", required=True, help="The cluster ID to use.")
@click.option("--node-id", type=int, help="The node id (default: node.id from --config).")
@click.option("--metadata-log-dir", help="metadata.log.dir (default: from --config).")
@click.option("--log-dir", "log_dirs", multiple=True, help="A data log directory to format too (repeatable).")
@click.option("--release-version", "-r",
              help="The release version for the initial feature settings (default: the latest production release).")
@click.option("--feature", "-f", "features", multiple=True, help="A feature=level setting, e.g. kraft.version=1.")
@click.option("--ignore-formatted", "-g", is_flag=True, help="Skip directories that are already formatted.")
@click.option("--standalone", "-s", is_flag=True, help="Initialize a single-node dynamic controller quorum.")
@click.option("--initial-controllers", "-I", help="Initial dynamic voters: id@host:port:directoryId,...")
@click.option("--controller-listener", default=None, help="Controller listener name (default: from --config, else CONTROLLER).")
@click.option("--controller-endpoint", default=None, help="HOST:PORT of this controller for --standalone (default: from --config).")
@click.option("--add-scram", "-S", "add_scram", multiple=True,
              help="A SCRAM credential to add to bootstrap.checkpoint, e.g. "
                   "'SCRAM-SHA-512=[name=alice,password=alice-secret]' (repeatable).")
def format_command(
    config_path: str | None,
    cluster_id: str,
    node_id: int | None,
    metadata_log_dir: str | None,
    log_dirs: tuple[str, ...],
    release_version: str | None,
    features: tuple[str, ...],
    ignore_formatted: bool,
    standalone: bool,
    initial_controllers: str | None,
    controller_listener: str | None,
    controller_endpoint: str | None,
    add_scram: tuple[str, ...] = (),
) -> None:
    """Format the metadata (and data) log directories of this node."""
    from kraft.records.bootstrap import LATEST_PRODUCTION, DynamicVoter, FormatError, parse_dynamic_voters, \
        parse_release_version
    from kraft.records.errors import StateFileError
    from kraft.records.state_files import random_kafka_uuid
    from kraft.tools.storage import DEFAULT_CONTROLLER_LISTENER, FormatRequest, _read_config, parse_scram, run_format

    try:
        if standalone and initial_controllers:
            raise FormatError("argument --initial-controllers/-I: not allowed with argument --standalone/-s")
        conf = _read_config(config_path) if config_path else None
        node = node_id if node_id is not None else (conf.node_id if conf else None)
        if node is None:
            raise FormatError("You must specify a valid non-negative node ID (--node-id or node.id in --config).")
        meta_dir = metadata_log_dir or (conf.metadata_log_dir if conf else None)
        if not meta_dir:
            raise FormatError("You must specify the metadata log directory (--metadata-log-dir or --config).")
        dirs = list(log_dirs) + (conf.log_dirs if conf else [])
        listener = controller_listener or (conf.controller_listener if conf else None) or DEFAULT_CONTROLLER_LISTENER
        release = parse_release_version(release_version) if release_version else LATEST_PRODUCTION
        feature_levels: dict[str, int] = {}
        for item in features:
            name, sep, level = item.partition("=")
            if not sep or not level.strip().lstrip("-").isdigit():
                raise FormatError(f"Can't parse feature={item!r}. The format must be feature=level.")
            feature_levels[name.strip()] = int(level)
        voters = None
        if (standalone or initial_controllers) and conf is not None and conf.static_voters:
            raise FormatError(
                "You cannot specify controller.quorum.voters and format the node with --initial-controllers "
                "or --standalone. If you want to use dynamic quorum, please remove controller.quorum.voters and "
                "specify controller.quorum.bootstrap.servers instead."
            )
        if standalone:
            if conf is not None and not conf.is_controller:
                raise FormatError("You cannot use --standalone on a broker node.")
            endpoint = _parse_host_port(controller_endpoint) if controller_endpoint else (conf.controller_endpoint if conf else None)
            if endpoint is None:
                raise FormatError("No controller listeners found: give --controller-endpoint HOST:PORT or a --config with one.")
            voters = [DynamicVoter(node, endpoint[0], endpoint[1], random_kafka_uuid())]
        elif initial_controllers:
            voters = parse_dynamic_voters(initial_controllers)
        run_format(
            FormatRequest(
                cluster_id=cluster_id,
                node_id=node,
                metadata_log_dir=meta_dir,
                log_dirs=dirs,
                release_version=release,
                features=feature_levels,
                initial_controllers=voters,
                controller_listener=listener,
                ignore_formatted=ignore_formatted,
                scram_records=[parse_scram(text) for text in add_scram],
            )
        )
    except FormatError as exc:
        click.echo(str(exc), err=True)
        sys.exit(1)
    except StateFileError as exc:
        click.echo(str(exc), err=True)
        sys.exit(1)


@storage_group.command("info")
@click.option("--config", "-c", "config_path", help="The Kafka configuration file to use.")
@click.option("--directory", "-d", "directories", multiple=True, help="A log directory to inspect (repeatable).")
def info_command(config_path: str | None, directories: tuple[str, ...]) -> None:
    """Get information about the Kafka log directories on this node."""
    from kraft.records.bootstrap import FormatError
    from kraft.tools.storage import _read_config, run_info

    dirs = set(directories)
    if config_path:
        try:
            conf = _read_config(config_path)
        except FormatError as exc:
            click.echo(str(exc), err=True)
            sys.exit(1)
        dirs.update(conf.log_dirs)
        if conf.metadata_log_dir:
            dirs.add(conf.metadata_log_dir)
    sys.exit(run_info(sorted(dirs)))
