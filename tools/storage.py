"""What ``kraft storage`` (:mod:`kraft.tools.storage_command`) does: Kafka's
``kafka-storage.sh`` (``StorageTool`` + ``Formatter``).

- ``format``: write ``meta.properties`` (version 1, cluster.id, node.id,
  directory.id) and ``bootstrap.checkpoint`` into every log directory, and for
  a dynamic quorum (``--standalone`` / ``--initial-controllers``) the KIP-853
  bootstrap snapshot ``__cluster_metadata-0/00000000000000000000-0000000000.checkpoint``.
- ``random-uuid``: a new Kafka uuid (for ``--cluster-id``).
- ``info``: what the log directories hold.

Directories come from ``--config`` (Kafka's ``server.properties``:
``log.dirs`` and ``metadata.log.dir``) and/or ``--metadata-log-dir`` /
``--log-dir``. Messages and exit codes follow Kafka's tool.
"""

from __future__ import annotations

import base64
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import click

from kraft.records.bootstrap import (
    KRAFT_VERSION_FEATURE,
    LATEST_PRODUCTION,
    METADATA_VERSION_FEATURE,
    DynamicVoter,
    FormatError,
    bootstrap_records,
    default_feature_levels,
    describe_bootstrap,
    feature_level,
    parse_dynamic_voters,
    parse_release_version,
    write_bootstrap_checkpoint,
    write_bootstrap_snapshot,
)
from kraft.records.errors import StateFileError
from kraft.records.state_files import (
    META_PROPERTIES_FILE,
    MetaProperties,
    parse_java_properties,
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
    #: UserScramCredentialRecords for bootstrap.checkpoint (--add-scram).
    scram_records: list[Any] | None = None


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
    features = dict(default_feature_levels(release))
    dynamic = request.initial_controllers is not None
    for name, level in (request.features or {}).items():
        if name == METADATA_VERSION_FEATURE:
            raise FormatError(f"Use --release-version instead of --feature {METADATA_VERSION_FEATURE}=X to avoid ambiguity.")
        if name != KRAFT_VERSION_FEATURE and name not in features:
            supported = ", ".join(sorted([KRAFT_VERSION_FEATURE, *features]))
            raise FormatError(f"Unsupported feature: {name}. Supported features are: {supported}")
        features[name] = level
    kraft_version = features.get(KRAFT_VERSION_FEATURE)
    if kraft_version is None:
        kraft_version = 1 if dynamic else 0
    elif kraft_version == 0 and dynamic:
        raise FormatError(
            "Cannot set kraft.version to 0 if one of the flags --standalone or --initial-controllers is used."
        )
    elif kraft_version > 0 and not dynamic:
        raise FormatError(
            f"Cannot set kraft.version to {kraft_version} unless one of the flags --standalone or "
            "--initial-controllers is used."
        )
    features[KRAFT_VERSION_FEATURE] = kraft_version

    # MetaPropertiesEnsemble: what is already there must agree.
    formatted: list[str] = []
    empty: list[str] = []
    for directory in directories:
        meta_path = Path(directory) / META_PROPERTIES_FILE
        if not meta_path.exists():
            empty.append(directory)
            continue
        try:
            props = MetaProperties.read(meta_path)
        except StateFileError as exc:
            raise FormatError(f"Error loading {meta_path}: {exc.reason}") from None
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
    if not empty:
        echo("All of the log directories are already formatted.")
        return
    records = bootstrap_records(release, features)
    echo(f"Bootstrap metadata: {describe_bootstrap(records, release)}")
    records = records + list(request.scram_records or [])
    now_ms = int(time.time() * 1000)
    for directory in empty:
        dtype = _directory_type(directory, request)
        voter = next((v for v in request.initial_controllers or [] if v.node_id == request.node_id), None)
        directory_id = voter.directory_id if dtype == "dynamic metadata voter directory" and voter else random_kafka_uuid()
        echo(f"Formatting {dtype} {directory} with {METADATA_VERSION_FEATURE} {release}.")
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        write_bootstrap_checkpoint(path, records, timestamp_ms=now_ms)
        if dtype.startswith("dynamic"):
            assert request.initial_controllers is not None
            write_bootstrap_snapshot(
                path,
                request.initial_controllers,
                request.controller_listener,
                kraft_version=kraft_version,
                timestamp_ms=now_ms,
            )
        MetaProperties(1, request.cluster_id, request.node_id, directory_id).write(path / META_PROPERTIES_FILE)


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


def _read_config(path: str) -> _ConfigDirs:
    """The few server.properties keys formatting needs (Kafka's names)."""
    try:
        text = Path(path).read_text(encoding="latin-1")
    except OSError as exc:
        raise FormatError(f"Unable to read {path}: {exc.strerror or exc}") from None
    props = parse_java_properties(text)
    log_dirs = [d.strip() for d in (props.get("log.dirs") or props.get("log.dir") or "").split(",") if d.strip()]
    metadata_dir = props.get("metadata.log.dir", "").strip() or (log_dirs[0] if log_dirs else None)
    node_id = None
    if props.get("node.id", "").strip():
        try:
            node_id = int(props["node.id"])
        except ValueError:
            raise FormatError(f"Invalid node.id {props['node.id']!r} in {path}") from None
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
    )


__all__ = ["FormatRequest", "run_format", "run_info", "feature_level", "DEFAULT_CONTROLLER_LISTENER"]
