"""``kraft storage``: Kafka's ``kafka-storage.sh`` (``StorageTool`` + ``Formatter``).

- ``format``: write ``meta.properties`` (version 1, cluster.id, node.id,
  directory.id) into every log directory and the bootstrap metadata as the
  release does: Kafka 4.4 (the default; KIP-1170) puts it into a
  controller's bootstrap snapshot
  ``__cluster_metadata-0/00000000000000000000-0000000000.checkpoint``, after
  the KRaft control records (kraft.version, and a dynamic quorum's voters);
  releases before 4.4 write ``bootstrap.checkpoint`` into every log
  directory, and that snapshot for ``--standalone`` / ``--initial-controllers``
  only (KIP-853). ``--no-initial-controllers`` formats a controller of a
  dynamic quorum that joins later (kraft.version 1); a controller whose
  config has no ``controller.quorum.voters`` must get one of the three
  flags (Kafka 4.x). Each directory is written under its ``.lock``
  (:mod:`kraft.dirlock`): never one a running node holds.
- ``random-uuid``: a new Kafka uuid (for ``--cluster-id``).
- ``info``: what the log directories hold.
- ``version-mapping``, ``feature-dependencies``: the feature levels of a
  release and what a feature level needs (:mod:`kraft.tools.feature_versions`).

Directories come from ``--config`` (Kafka's ``server.properties``:
``log.dirs`` and ``metadata.log.dir``) and/or ``--metadata-log-dir`` /
``--log-dir``. Messages and exit codes follow Kafka's tool.
"""

from __future__ import annotations

import base64
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import click

from kraft.dirlock import DirectoryLock
from kraft.kafka_release import LATEST, KafkaRelease
from kraft.records.bootstrap import (
    FEATURE_VERSIONS,
    KRAFT_VERSION_FEATURE,
    LATEST_PRODUCTION,
    METADATA_VERSION_FEATURE,
    MINIMUM_RELEASE,
    DynamicVoter,
    FormatError,
    bootstrap_records,
    describe_bootstrap,
    default_feature_levels,
    feature_level,
    parse_dynamic_voters,
    parse_release_version,
    write_bootstrap_checkpoint,
    write_bootstrap_snapshot,
)
from kraft.records.errors import StateFileError
from kraft.tools.feature_versions import feature_dependencies, version_mapping
from kraft.tools.kafka_version import current_release, kafka_version_option
from kraft.records.state_files import (
    META_PROPERTIES_FILE,
    MetaProperties,
    random_kafka_uuid,
    uuid_to_kafka,
)
from kraft.wire.scram import MAX_ITERATIONS, MIN_ITERATIONS, ScramMechanism, credential_from_salted, make_credential

DEFAULT_CONTROLLER_LISTENER = "CONTROLLER"


@dataclass
class FormatRequest:
    cluster_id: str
    node_id: int
    metadata_log_dir: str
    log_dirs: list[str]
    release_version: str = LATEST_PRODUCTION
    features: dict[str, int] | None = None
    initial_controllers: list[DynamicVoter] | None = None
    controller_listener: str = DEFAULT_CONTROLLER_LISTENER
    ignore_formatted: bool = False
    #: --no-initial-controllers: kraft.version 1, voters learnt from the quorum.
    no_initial_controllers: bool = False
    #: The config sets controller.quorum.voters (a static quorum).
    static_voters: bool = False
    #: Formatting from a config file (``--config``): the quorum is then
    #: dynamic exactly when it sets no controller.quorum.voters, as Kafka's
    #: ``StorageTool`` decides (``setHasDynamicQuorum(staticVotersEmpty)``);
    #: without one, when a voter flag was given.
    from_config: bool = False
    #: UserScramCredentialRecords for the bootstrap metadata (--add-scram).
    scram_records: list[Any] | None = None
    #: The Kafka release whose formatter (features, messages) this one follows.
    kafka: KafkaRelease = LATEST
    #: process.roles has controller (or no config: kraft's nodes are
    #: controllers). Kafka 4.4 writes a broker no bootstrap snapshot.
    controller: bool = True
    #: Write the KIP-1170 layout (``kafka.bootstrap_snapshot``: Kafka 4.4's,
    #: the default) rather than ``bootstrap.checkpoint``. kraft's tools and
    #: node read both (:func:`kraft.records.bootstrap.read_bootstrap_metadata`).
    kip1170_layout: bool = False


def parse_scram(text: str) -> Any:
    """One ``--add-scram`` value, Kafka's ``ScramParser`` format:
    ``SCRAM-SHA-256=[name=alice,password=alice-secret]`` or
    ``SCRAM-SHA-512=[name=alice,iterations=8192,salt="N3E=",saltedpassword="YCE="]``.
    Returns a UserScramCredentialRecord (salted: the password is not kept)."""
    from kraft.messages.registry import message_class

    m = re.fullmatch(r"\s*([A-Za-z0-9-]+)=\[(.*)\]\s*", text, re.DOTALL)
    if m is None:
        raise FormatError(f"Failed to parse SCRAM credential {text!r}: expected MECHANISM=[name=...,password=...]")
    try:
        mechanism = ScramMechanism.from_name(m.group(1))
    except ValueError:
        raise FormatError(f"Unknown SCRAM mechanism {m.group(1)} (SCRAM-SHA-256 or SCRAM-SHA-512)") from None
    fields: dict[str, str] = {}
    for item in re.findall(r'([a-z]+)=("(?:[^"]*)"|[^,]*)', m.group(2)):
        fields[item[0]] = item[1][1:-1] if item[1].startswith('"') else item[1]
    unknown = set(fields) - {"name", "password", "salt", "iterations", "saltedpassword"}
    if unknown:
        raise FormatError(f"Unknown SCRAM credential field(s) {', '.join(sorted(unknown))} in {text!r}")
    name = fields.get("name")
    if not name:
        raise FormatError(f"You must supply 'name' to add-scram: {text!r}")
    try:
        iterations = int(fields.get("iterations", str(MIN_ITERATIONS)))
    except ValueError:
        raise FormatError(f"Invalid iterations in {text!r}") from None
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise FormatError(f"The 'iterations' value must be >= {MIN_ITERATIONS} and <= {MAX_ITERATIONS} for "
                          f"add-scram using {mechanism.mechanism_name}")
    try:
        salt = base64.b64decode(fields["salt"], validate=True) if "salt" in fields else None
        if "saltedpassword" in fields:
            if salt is None:
                raise FormatError(f"You must supply 'salt' with 'saltedpassword' to add-scram: {text!r}")
            credential = credential_from_salted(mechanism, base64.b64decode(fields["saltedpassword"], validate=True),
                                                salt, iterations)
        elif "password" in fields:
            credential = make_credential(mechanism, fields["password"], iterations=iterations, salt=salt)
        else:
            raise FormatError(f"You must supply one of 'password' or 'saltedpassword' to add-scram: {text!r}")
    except ValueError as e:
        raise FormatError(f"Invalid base64 in {text!r}: {e}") from None
    record_cls = message_class("UserScramCredentialRecord")
    return record_cls(name=name, mechanism=mechanism.type_id, salt=credential.salt,
                      stored_key=credential.stored_key, server_key=credential.server_key, iterations=iterations)


def _directory_type(directory: str, request: FormatRequest) -> str:
    if directory != request.metadata_log_dir:
        return "data directory"
    if request.initial_controllers is None:
        return "metadata directory"
    if any(v.node_id == request.node_id for v in request.initial_controllers):
        return "dynamic metadata voter directory"
    return "dynamic metadata directory"


def run_format(request: FormatRequest, out: IO[str] | None = None) -> None:
    """Kafka's ``Formatter.run``; raises :class:`FormatError` with Kafka's message."""
    echo = (lambda s: click.echo(s, file=out)) if out is not None else click.echo
    if request.node_id < 0:
        raise FormatError("You must specify a valid non-negative node ID.")
    if not request.cluster_id:
        raise FormatError("You must specify the cluster id.")
    directories = sorted(set(request.log_dirs) | {request.metadata_log_dir})
    if not directories:
        raise FormatError("You must specify at least one directory to format")
    release = request.release_version
    features = _effective_feature_levels(request)
    kraft_version = features[KRAFT_VERSION_FEATURE]
    empty = _unformatted_directories(request, directories)
    if not empty:
        echo("All of the log directories are already formatted.")
        return
    if request.static_voters and request.initial_controllers is not None:
        # Stricter than Kafka 4.0.0, as Kafka 4.1: a static voter list and a
        # dynamic bootstrap snapshot contradict each other.
        raise FormatError(
            "You cannot specify controller.quorum.voters and format the node with --initial-controllers "
            "or --standalone. If you want to use dynamic quorum, please remove controller.quorum.voters and "
            "specify controller.quorum.bootstrap.servers instead."
        )
    records = bootstrap_records(release, features)
    records = records + list(request.scram_records or [])
    if request.kafka.prints_bootstrap_metadata:
        echo(f"Bootstrap metadata: {describe_bootstrap(records, release)}")
    now_ms = int(time.time() * 1000)
    # Kafka writes the directories in the iteration order of a java.util.HashMap
    # keyed by their names (MetaPropertiesEnsemble.Copier): same order here.
    for directory in java_hash_map_order(empty):
        dtype = _directory_type(directory, request)
        voter = next((v for v in request.initial_controllers or [] if v.node_id == request.node_id), None)
        directory_id = voter.directory_id if dtype == "dynamic metadata voter directory" and voter else random_kafka_uuid()
        echo(f"Formatting {dtype} {directory} with {METADATA_VERSION_FEATURE} {release}.")
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        # One process per log directory: not one a node is running on.
        with DirectoryLock(path):
            voters = request.initial_controllers if dtype.startswith("dynamic") else None
            if not request.kip1170_layout:
                write_bootstrap_checkpoint(path, records, timestamp_ms=now_ms)
                if voters is not None:
                    write_bootstrap_snapshot(path, voters, request.controller_listener, kraft_version=kraft_version,
                                             timestamp_ms=now_ms)
            elif directory == request.metadata_log_dir and request.controller:
                # KIP-1170: the bootstrap records follow the KRaft control records.
                write_bootstrap_snapshot(path, voters, request.controller_listener, kraft_version=kraft_version,
                                         timestamp_ms=now_ms, records=records)
            MetaProperties(1, request.cluster_id, request.node_id, directory_id).write(path / META_PROPERTIES_FILE)


def _effective_feature_levels(request: FormatRequest) -> dict[str, int]:
    """Kafka's ``Formatter.calculateEffectiveFeatureLevels``: the release's
    default levels, overridden by ``--feature``, with ``kraft.version`` as
    ``Formatter.effectiveKRaftFeatureLevel`` decides it; each level's
    dependencies are checked."""
    release = request.release_version
    kafka = request.kafka
    features = dict(default_feature_levels(release, kafka.features, kafka.level_caps))
    for name, level in (request.features or {}).items():
        if name == METADATA_VERSION_FEATURE:
            raise FormatError(f"Use --release-version instead of --feature {METADATA_VERSION_FEATURE}=X to avoid ambiguity.")
        if name not in kafka.features:
            supported = ", ".join(sorted(kafka.features))
            raise FormatError(f"Unsupported feature: {name}. Supported features are: {supported}")
        features[name] = level
    if request.from_config and not kafka.dynamic_quorum_by_flags:
        dynamic = not request.static_voters
    else:
        dynamic = request.initial_controllers is not None or request.no_initial_controllers
    kraft_version = features.get(KRAFT_VERSION_FEATURE)
    if kraft_version is None:
        kraft_version = 1 if dynamic else 0
    elif kraft_version == 0 and dynamic:
        raise FormatError(kafka.kraft_version_0_error)
    elif kraft_version > 0 and not dynamic:
        # Formatter.effectiveKRaftFeatureLevel, reworded in Kafka 4.1.
        raise FormatError(kafka.kraft_version_1_error.replace("kraft.version to 1", f"kraft.version to {kraft_version}"))
    features[KRAFT_VERSION_FEATURE] = kraft_version
    _validate_dependencies(features, feature_level(release))
    return features


def _unformatted_directories(request: FormatRequest, directories: list[str]) -> list[str]:
    """Kafka's ``MetaPropertiesEnsemble`` load and verify: the directories
    still to format; those already formatted must agree with the request
    (and are refused without ``--ignore-formatted``)."""
    # Imported here: kraft.log_dir_check reads the config (which brings the
    # TLS settings and trio), and `kraft storage --help` imports nothing heavy.
    from kraft.log_dir_check import check_log_dir, read_meta_properties

    formatted: list[str] = []
    empty: list[str] = []
    for directory in directories:
        meta_path = Path(directory) / META_PROPERTIES_FILE
        # The checks `kraft node start` makes, with its lines (kraft.log_dir_check).
        check_log_dir(Path(directory))
        props = read_meta_properties(Path(directory))
        if props is None:
            empty.append(directory)
            continue
        if props.cluster_id != request.cluster_id:
            raise FormatError(
                f"Invalid cluster.id in: {meta_path}. Expected {request.cluster_id}, but read {props.cluster_id}"
            )
        if props.node_id != request.node_id:
            raise FormatError(f"Stored node id {props.node_id} doesn't match previous node id {request.node_id} in {meta_path}.")
        formatted.append(directory)
    if formatted and not request.ignore_formatted:
        raise FormatError(
            f"Log directory {formatted[0]} is already formatted. "
            "Use --ignore-formatted to ignore this directory and format the others."
        )
    return empty


def _validate_dependencies(features: dict[str, int], metadata_level: int) -> None:
    """Kafka's ``Feature.validateVersion``: each level's dependencies are met."""
    levels = {**features, METADATA_VERSION_FEATURE: metadata_level}
    for name, level in sorted(features.items()):
        spec = FEATURE_VERSIONS.get(name, {}).get(level)
        if spec is None:
            raise FormatError(f"No feature:{name} with feature level {level}")
        for dep, dep_level in spec[1].items():
            if levels.get(dep, 0) < dep_level:
                raise FormatError(f"{name} could not be set to {level} because it depends on {dep} level {dep_level}")


def _java_string_hash(text: str) -> int:
    """``java.lang.String.hashCode`` (over UTF-16 code units), as an unsigned int32."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h


def java_hash_map_order(keys: list[str]) -> list[str]:
    """The iteration order of a ``java.util.HashMap`` holding ``keys``
    (inserted in the given order): by bucket (the spread hash modulo the
    table size, 16 doubled while above the 0.75 load factor), then insertion."""
    capacity = 16
    while len(keys) > capacity * 0.75:
        capacity *= 2

    def bucket(key: str) -> int:
        h = _java_string_hash(key)
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(keys, key=bucket)  # stable: insertion order within a bucket


def run_info(directories: list[str], echo: IO[str] | None = None) -> int:
    """Kafka's ``StorageTool.infoCommand``; returns the exit code."""
    say = (lambda s: click.echo(s, file=echo)) if echo is not None else click.echo
    problems: list[str] = []
    found: list[str] = []
    previous: MetaProperties | None = None
    for directory in sorted(directories):
        path = Path(directory)
        if not path.is_dir():
            problems.append(f"{directory} does not exist" if not path.exists() else f"{directory} is not a directory")
            continue
        found.append(directory)
        meta_path = path / META_PROPERTIES_FILE
        if not meta_path.exists():
            problems.append(f"{directory} is not formatted.")
            continue
        try:
            current = MetaProperties.read(meta_path)
        except StateFileError as exc:
            problems.append(f"Error loading {meta_path}: {exc.reason}")
            continue
        if previous is None:
            previous = current
        elif previous.cluster_id != current.cluster_id:
            problems.append("Mismatched cluster IDs between storage directories.")
        elif previous.node_id != current.node_id:
            problems.append("Mismatched node IDs between storage directories.")
    if previous is not None and previous.version == 0:
        problems.append(
            "The kafka configuration file appears to be for a cluster in KRaft mode, but "
            "the directories are formatted for legacy mode."
        )
    if not directories:
        say("No directories specified.")
        return 0
    if found:
        say("Found log directory:" if len(found) == 1 else "Found log directories:")
        for d in found:
            say(f"  {d}")
        say("")
    if previous is not None:
        props = previous.to_properties()
        say("Found metadata: {" + ", ".join(f"{k}={props[k]}" for k in sorted(props)) + "}")
        say("")
    if problems:
        say("Found problem:" if len(problems) == 1 else "Found problems:")
        for p in problems:
            say(f"  {p}")
        say("")
        return 1
    return 0


@dataclass
class _ConfigDirs:
    node_id: int | None
    metadata_log_dir: str | None
    log_dirs: list[str]
    controller_listener: str | None
    controller_endpoint: tuple[str, int] | None
    static_voters: bool
    is_controller: bool
    #: unstable.feature.versions.enable: format with a release not yet production
    unstable_feature_versions: bool = False


def _read_config(path: str) -> _ConfigDirs:
    """The few server.properties keys formatting needs (Kafka's names)."""
    # At run time: `kraft storage --help` stays light.
    from kraft.config import NodeConfig, check_roles_against_voters, metadata_log_dir, read_properties, validate_numbers

    try:
        props = read_properties(path)
    except OSError as exc:
        raise FormatError(f"Unable to read {path}: {exc.strerror or exc}") from None
    # Every value checked as the node will check it (Kafka's tool builds a
    # KafkaConfig first): a directory formatted from a config no node can
    # start with helps nobody. A bad value is a ConfigError (exit code 3).
    validate_numbers(props)
    roles_named = {r.strip() for r in props.get("process.roles", "").split(",") if r.strip()}
    if roles_named and props.get("node.id", "").strip():
        check_roles_against_voters(roles_named, int(props["node.id"]), props)
    stated_roles = {r.strip() for r in props.get("process.roles", "").split(",") if r.strip()}
    if not stated_roles or ("controller" in stated_roles and props.get("node.id", "").strip()):
        # A controller's whole config, as `kraft node start` reads it (no
        # roles at all: its refusal, the same line as start's).
        NodeConfig.from_properties(props)
    log_dirs = [d.strip() for d in (props.get("log.dirs") or props.get("log.dir") or "").split(",") if d.strip()]
    metadata_dir = str(metadata_log_dir(props))  # the directory `kraft node start` will open
    node_id = None
    if props.get("node.id", "").strip():
        node_id = int(props["node.id"])  # checked by validate_numbers
    names = [n.strip().upper() for n in props.get("controller.listener.names", "").split(",") if n.strip()]
    listener = names[0] if names else None
    endpoint = None
    if listener:
        for item in props.get("listeners", "").split(","):
            name, sep, rest = item.strip().partition("://")
            if sep and name.strip().upper() == listener:
                host, _, port = rest.rpartition(":")
                try:
                    endpoint = (host.strip("[]") or "localhost", int(port))
                except ValueError:
                    raise FormatError(f"Invalid listener {item!r} in {path}") from None
    roles = {r.strip() for r in props.get("process.roles", "").split(",") if r.strip()}
    return _ConfigDirs(
        node_id,
        metadata_dir,
        log_dirs,
        listener,
        endpoint,
        bool(props.get("controller.quorum.voters", "").strip()),
        "controller" in roles,
        props.get("unstable.feature.versions.enable", "").strip().lower() == "true",
    )


def _parse_host_port(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise click.BadParameter(f"expected HOST:PORT, got {text!r}")
    return host.strip("[]"), int(port)


@click.group("storage", short_help="Format and inspect log directories (kafka-storage.sh).")
@kafka_version_option
def storage_group() -> None:
    """The Kafka storage tool (kafka-storage.sh)."""


@storage_group.command("random-uuid")
def random_uuid_command() -> None:
    """Print a random UUID."""
    click.echo(uuid_to_kafka(random_kafka_uuid()))


def _release_to_format(release_version: str | None, kafka: KafkaRelease, conf: _ConfigDirs | None) -> str:
    """The metadata version ``--release-version`` names (default: the
    release's latest production one); Kafka's ``Formatter.verifyReleaseVersion``
    refuses one not yet production unless ``unstable.feature.versions.enable``."""
    unstable = conf is not None and conf.unstable_feature_versions
    # From 4.2 (MetadataVersion.fromVersionString(text, unstableFeatureVersionsEnabled))
    # a version not yet production is unknown unless unstable ones are enabled.
    newest = kafka.latest_production if kafka.unknown_release_version and not unstable else kafka.latest_testing
    release = (parse_release_version(release_version, newest, kafka.unknown_release_version)
               if release_version
               else kafka.latest_production)
    if feature_level(release) > feature_level(kafka.latest_production) and not unstable:
        # Formatter.verifyReleaseVersion: MetadataVersion.isProduction.
        raise FormatError(f"{METADATA_VERSION_FEATURE} {release} is not yet stable.")
    return release


def _parse_feature_levels(features: tuple[str, ...]) -> dict[str, int]:
    """The ``--feature name=level`` settings, by name."""
    feature_levels: dict[str, int] = {}
    for item in features:
        name, sep, level = item.partition("=")
        if not sep or not level.strip().lstrip("-").isdigit():
            raise FormatError(f"Can't parse feature={item!r}. The format must be feature=level.")
        feature_levels[name.strip()] = int(level)
    return feature_levels


def _initial_voters(node: int, standalone: bool, initial_controllers: str | None, controller_endpoint: str | None,
                    conf: _ConfigDirs | None) -> list[DynamicVoter] | None:
    """The dynamic quorum's first voters: this controller alone
    (``--standalone``, a new directory id), those ``--initial-controllers``
    names, else none (a static quorum, or ``--no-initial-controllers``)."""
    if standalone:
        if conf is not None and not conf.is_controller:
            raise FormatError("You cannot use --standalone on a broker node.")
        endpoint = _parse_host_port(controller_endpoint) if controller_endpoint else (conf.controller_endpoint if conf else None)
        if endpoint is None:
            raise FormatError("No controller listeners found: give --controller-endpoint HOST:PORT or a --config with one.")
        return [DynamicVoter(node, endpoint[0], endpoint[1], random_kafka_uuid())]
    if initial_controllers:
        return parse_dynamic_voters(initial_controllers)
    return None


@storage_group.command("format")
@click.option("--config", "-c", "config_path", help="The Kafka configuration file to use.")
@click.option("--cluster-id", "-t", required=True, help="The cluster ID to use.")
@click.option("--node-id", type=int, help="The node id (default: node.id from --config).")
@click.option("--metadata-log-dir", help="metadata.log.dir (default: from --config).")
@click.option("--log-dir", "log_dirs", multiple=True, help="A data log directory to format too (repeatable).")
@click.option("--release-version", "-r", help=f"The release version for the initial feature settings (default {LATEST_PRODUCTION}; "
              "with --kafka-version, that release's default).")
@click.option("--feature", "-f", "features", multiple=True, help="A feature=level setting, e.g. kraft.version=1.")
@click.option("--ignore-formatted", "-g", is_flag=True, help="Skip directories that are already formatted.")
@click.option("--standalone", "-s", is_flag=True, help="Initialize a single-node dynamic controller quorum.")
@click.option("--initial-controllers", "-I", help="Initial dynamic voters: id@host:port:directoryId,...")
@click.option("--no-initial-controllers", "-N", is_flag=True,
              help="Used to initialize a server without a dynamic quorum topology.")
@click.option("--controller-listener", default=None, help="Controller listener name (default: from --config, else CONTROLLER).")
@click.option("--controller-endpoint", default=None, help="HOST:PORT of this controller for --standalone (default: from --config).")
@click.option("--add-scram", "-S", "add_scram", multiple=True,
              help="A SCRAM credential to add to the bootstrap metadata, e.g. "
                   "'SCRAM-SHA-512=[name=alice,password=alice-secret]' (repeatable).")
@kafka_version_option
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
    no_initial_controllers: bool,
    controller_listener: str | None,
    controller_endpoint: str | None,
    add_scram: tuple[str, ...] = (),
) -> None:
    """Format the metadata (and data) log directories of this node."""
    kafka = current_release()
    try:
        chosen = [flag for flag, given in (("--standalone/-s", standalone),
                                           ("--no-initial-controllers/-N", no_initial_controllers),
                                           ("--initial-controllers/-I", bool(initial_controllers))) if given]
        if len(chosen) > 1:
            raise FormatError(f"argument {chosen[1]}: not allowed with argument {chosen[0]}")
        conf = _read_config(config_path) if config_path else None
        if conf is not None and conf.is_controller and not conf.static_voters and not chosen:
            # Kafka 4.x StorageTool.runFormatCommand.
            raise FormatError("Because controller.quorum.voters is not set on this controller, you must specify "
                              "one of the following: --standalone, --initial-controllers, or "
                              "--no-initial-controllers.")
        node = node_id if node_id is not None else (conf.node_id if conf else None)
        if node is None:
            raise FormatError("You must specify a valid non-negative node ID (--node-id or node.id in --config).")
        meta_dir = metadata_log_dir or (conf.metadata_log_dir if conf else None)
        if not meta_dir:
            raise FormatError("You must specify the metadata log directory (--metadata-log-dir or --config).")
        dirs = list(log_dirs) + (conf.log_dirs if conf else [])
        listener = controller_listener or (conf.controller_listener if conf else None) or DEFAULT_CONTROLLER_LISTENER
        release = _release_to_format(release_version, kafka, conf)
        feature_levels = _parse_feature_levels(features)
        voters = _initial_voters(node, standalone, initial_controllers, controller_endpoint, conf)
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
                no_initial_controllers=no_initial_controllers,
                static_voters=conf is not None and conf.static_voters,
                from_config=conf is not None,
                scram_records=[parse_scram(text) for text in add_scram],
                kafka=kafka,
                controller=conf is None or conf.is_controller,
                kip1170_layout=kafka.bootstrap_snapshot,
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


@storage_group.command("version-mapping")
@click.option("--release-version", "-r", help="The release version to use for the corresponding feature mapping. "
              f"The minimum is {MINIMUM_RELEASE}; the default is {LATEST_PRODUCTION}")
@kafka_version_option
def version_mapping_command(release_version: str | None) -> None:
    """Look up the corresponding features for a given metadata version.
    Using the command with no --release-version argument will return the
    mapping for the latest stable metadata version"""
    try:
        click.echo(version_mapping(release_version, current_release()), nl=False)
    except FormatError as exc:
        click.echo(str(exc), err=True)
        sys.exit(1)


# Kafka's argparse4j takes any unique prefix of a subcommand: `kafka-storage.sh version`.
storage_group.add_command(click.Command("version", callback=version_mapping_command.callback,
                                        params=version_mapping_command.params, hidden=True,
                                        help=version_mapping_command.help))


@storage_group.command("feature-dependencies")
@click.option("--feature", "-f", "features", multiple=True, metavar="FEATURE=LEVEL",
              help="The features and their versions to look up dependencies for, in feature=version format. "
                   "For example: `metadata.version=5`.")
@kafka_version_option
def feature_dependencies_command(features: tuple[str, ...]) -> None:
    """Look up dependencies for a given feature version. If the feature is
    not known or the version not yet defined, an error is thrown. Multiple
    features can be specified."""
    try:
        click.echo(feature_dependencies(features, current_release()), nl=False)
    except FormatError as exc:
        click.echo(str(exc), err=True)
        sys.exit(1)


__all__ = ["FormatRequest", "run_format", "run_info", "storage_group", "feature_level"]
from kraft.tools.recover_quorum import recover_quorum_command as _recover_quorum  # noqa: E402  (registers below)
storage_group.add_command(_recover_quorum)
