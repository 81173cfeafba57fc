"""``kraft features``: Kafka's ``kafka-features.sh`` (Kafka 4.x
``FeatureCommand``) for a kraft quorum -- or a Kafka one: it speaks only
Kafka's protocol.

    kraft features --bootstrap-controller HOST:PORT describe
    kraft features --bootstrap-controller HOST:PORT upgrade --feature kraft.version=1 [--dry-run]
    kraft features --bootstrap-controller HOST:PORT downgrade --feature F=L [--unsafe] [--dry-run]
    kraft features --bootstrap-controller HOST:PORT disable --feature F [--unsafe] [--dry-run]

What it sends is what Kafka's admin client sends: ``describe`` is
ApiVersions (v4, the first version that shows a feature whose minimum is 0,
such as ``kraft.version``) to a bootstrap node; ``upgrade`` / ``downgrade``
/ ``disable`` are one UpdateFeatures (v2 at most) to the active controller
found with DescribeCluster (``controllerId``; retried while it is unknown or
answers NOT_CONTROLLER, until ``default.api.timeout.ms``).

Output is ``FeatureCommand``'s, byte for byte: ``describe`` prints one
line per supported feature, sorted by name, ``Feature: F<TAB>SupportedMinVersion:
..<TAB>SupportedMaxVersion: ..<TAB>FinalizedVersionLevel: ..<TAB>Epoch: ..``
(a feature not finalized is level 0; no epoch is ``-``); an update prints
``F was upgraded to L.`` (``can be upgraded`` with ``--dry-run``) or
``Could not upgrade F to L. <reason>`` (``Can not`` with ``--dry-run``)
per feature, sorted, and then, if any failed, ``N out of M operation(s)
failed.`` on stderr with exit status 1. Against a kraft quorum the one
feature is ``kraft.version``: upgrading it to 1 turns a static quorum
(``controller.quorum.voters``) into a dynamic one (KIP-853), after which
``kraft quorum add-controller`` / ``remove-controller`` work.

Connection options, ``--command-config`` and error reporting are those of
``kraft quorum`` (:mod:`kraft.tools.quorum`). The requests are the admin
client's (:mod:`kraft.admin_client.admin_features`); this module parses the options
and prints what Kafka prints.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from kraft.tools.quorum import QuorumToolOptions, ToolError, run_tool
from kraft.tools.kafka_version import current_release, kafka_version_option

if TYPE_CHECKING:
    from kraft.admin_client.admin_features import FeatureMetadata, FeatureUpdate, UpgradeType

__all__ = [
    "features_group",
    "FeatureLine",
    "feature_lines",
    "parse_name_and_level",
    "format_describe",
    "format_update",
]

@dataclass(frozen=True, slots=True)
class FeatureLine:
    """One feature as ``describe`` reports it."""

    name: str
    supported_min: int
    supported_max: int
    finalized_level: int


def parse_name_and_level(text: str) -> tuple[str, int]:
    """``FeatureCommand.parseNameAndLevel``: ``feature=level``, with its messages."""
    name, equals, level_text = text.partition("=")
    if not equals:
        raise ToolError(f"Can't parse feature=level string {text}: equals sign not found.")
    level_text = level_text.strip()
    try:
        level = int(level_text)
    except ValueError:
        level = None
    if level is None or not -(2**15) <= level < 2**15:
        raise ToolError(f"Can't parse feature=level string {text}: unable to parse {level_text} as a short.")
    return name.strip(), level


def format_describe(features: Sequence[FeatureLine], epoch: int | None) -> str:
    """``FeatureCommand.handleDescribe``."""
    epoch_text = "-" if epoch is None else str(epoch)
    return "".join(
        f"Feature: {f.name}\tSupportedMinVersion: {f.supported_min}\tSupportedMaxVersion: {f.supported_max}\t"
        f"FinalizedVersionLevel: {f.finalized_level}\tEpoch: {epoch_text}\n"
        for f in sorted(features, key=lambda f: f.name))


def format_update(op: str, levels: dict[str, int], errors: dict[str, str | None], dry_run: bool) -> tuple[str, int]:
    """``FeatureCommand.update``'s report: (stdout, number of failures).
    ``errors`` maps each feature to its failure message, None on success."""
    out = []
    failures = 0
    for feature in sorted(errors):
        message = errors[feature]
        level = levels[feature]
        if message is not None:
            helper = "Can not " if dry_run else "Could not "
            suffix = f"disable {feature}" if op == "disable" else f"{op} {feature} to {level}"
            out.append(f"{helper}{suffix}. {message}\n")
            failures += 1
        else:
            verb = " can be " if dry_run else " was "
            what = "disabled." if op == "disable" else f"{op}d to {level}."
            out.append(f"{feature}{verb}{what}\n")
    return "".join(out), failures


def _fail(message: str) -> NoReturn:
    click.echo(message, err=True)
    sys.exit(1)


def feature_lines(metadata: FeatureMetadata) -> list[FeatureLine]:
    """``FeatureCommand.handleDescribe``'s rows: every supported feature, at
    its finalized level (0 when not finalized)."""
    return [FeatureLine(name, r.min_version, r.max_version, metadata.finalized.get(name, 0))
            for name, r in metadata.supported.items()]


# ---------------------------------------------------------------- commands


@click.group("features", short_help="Describe and update the quorum's finalized features.")
@click.option("--bootstrap-server", metavar="HOST:PORT[,...]",
              help="A comma-separated list of host:port pairs to use for establishing the connection to the "
                   "Kafka cluster.")
@click.option("--bootstrap-controller", metavar="HOST:PORT[,...]",
              help="A comma-separated list of host:port pairs to use for establishing the connection to the "
                   "KRaft quorum.")
@click.option("--command-config", type=click.Path(path_type=Path, dir_okay=False),
              help="Property file containing configs to be passed to Admin Client.")
@kafka_version_option
@click.pass_context
def features_group(ctx: click.Context, bootstrap_server: str | None, bootstrap_controller: str | None,
                   command_config: Path | None) -> None:
    """This tool manages feature flags in Kafka (kafka-features.sh for kraft):
    upgrade kraft.version to 1 to make a static quorum dynamic (KIP-853)."""
    ctx.obj = QuorumToolOptions(bootstrap_server, bootstrap_controller, command_config)


def _resolve(options: QuorumToolOptions) -> Any:
    try:
        return options.resolve()
    except ToolError as e:
        _fail(str(e))


@features_group.command("describe")
@click.option("--json", "as_json", is_flag=True,
              help="kraft: the answer as one JSON document, every field of the feature model (finalized levels, "
                   "their epoch, supported ranges).")
@click.pass_obj
def describe_command(options: QuorumToolOptions, as_json: bool) -> None:
    """Describes the current active feature flags."""
    bootstrap, settings = _resolve(options)

    async def main() -> str:
        from kraft.admin_client.admin import AdminSession
        from kraft.admin_client.admin_features import describe_features
        from kraft.tools.structured_output import as_json as json_document

        async with AdminSession(bootstrap, settings) as session:
            metadata = await describe_features(session)
        if as_json:
            # Field by field (tools/structured_output.py): a field added
            # to the model (kraft/raft/rpcs/api_versions_rpc.py) shows up as is.
            return json_document({"features": metadata})
        return format_describe(feature_lines(metadata), metadata.finalized_epoch)

    run_tool(main)


def _run_update(options: QuorumToolOptions, op: str, updates: dict[str, FeatureUpdate], dry_run: bool) -> None:
    bootstrap, settings = _resolve(options)
    if not updates:
        _fail(f"You must specify at least one feature to {op}")

    async def main() -> str:
        from kraft.admin_client.admin import AdminSession
        from kraft.admin_client.admin_features import update_features

        async with AdminSession(bootstrap, settings) as session:
            errors = await update_features(session, updates, dry_run)
        report, failures = format_update(op, {name: u.max_version_level for name, u in updates.items()}, errors,
                                         dry_run)
        if failures:
            click.echo(report, nl=False)
            raise ToolError(f"{failures} out of {len(updates)} operation(s) failed.")
        return report

    run_tool(main)


def _parse_updates(features: Sequence[str], kind: UpgradeType) -> dict[str, FeatureUpdate]:
    from kraft.admin_client.admin_features import FeatureUpdate

    updates: dict[str, FeatureUpdate] = {}
    try:
        for text in features:
            name, level = parse_name_and_level(text)
            if name in updates:
                raise ToolError(f"Feature {name} was specified more than once.")
            updates[name] = FeatureUpdate(level, kind)
    except ToolError as e:
        _fail(str(e))
    return updates


@features_group.command("version-mapping")
@click.option("--release-version", help="The release version to use for the corresponding feature mapping. "
              "The default is the latest stable metadata version.")
@kafka_version_option
def version_mapping_command(release_version: str | None) -> None:
    """Look up the corresponding features for a given metadata version.
    Using the command with no --release-version argument will return the
    mapping for the latest stable metadata version"""
    from kraft.records.bootstrap import FormatError
    from kraft.tools.feature_versions import version_mapping

    try:
        click.echo(version_mapping(release_version, current_release()), nl=False)
    except FormatError as e:
        _fail(str(e))


@features_group.command("feature-dependencies")
@click.option("--feature", "features", multiple=True, metavar="FEATURE=LEVEL",
              help="The features and their versions to look up dependencies for, in feature=version format. "
                   "For example: `metadata.version=5`.")
@kafka_version_option
def feature_dependencies_command(features: tuple[str, ...]) -> None:
    """Look up dependencies for a given feature version. If the feature is
    not known or the version not yet defined, an error is thrown. Multiple
    features can be specified."""
    from kraft.records.bootstrap import FormatError
    from kraft.tools.feature_versions import FEATURES_UNSUPPORTED_LEVEL, feature_dependencies

    try:
        click.echo(feature_dependencies(features, current_release(), FEATURES_UNSUPPORTED_LEVEL), nl=False)
    except FormatError as e:
        _fail(str(e))


@features_group.command("upgrade")
@click.option("--feature", "features", multiple=True, metavar="FEATURE=LEVEL",
              help="A feature upgrade we should perform, in feature=level format. For example: `kraft.version=1`.")
@click.option("--dry-run", is_flag=True, help="Validate this upgrade, but do not perform it.")
@click.pass_obj
def upgrade_command(options: QuorumToolOptions, features: tuple[str, ...], dry_run: bool) -> None:
    """Upgrade one or more feature flags."""
    from kraft.admin_client.admin_features import UpgradeType

    _run_update(options, "upgrade", _parse_updates(features, UpgradeType.UPGRADE), dry_run)


@features_group.command("downgrade")
@click.option("--feature", "features", multiple=True, metavar="FEATURE=LEVEL",
              help="A feature downgrade we should perform, in feature=level format.")
@click.option("--unsafe", is_flag=True, help="Perform this downgrade even if it may irreversibly destroy metadata.")
@click.option("--dry-run", is_flag=True, help="Validate this downgrade, but do not perform it.")
@click.pass_obj
def downgrade_command(options: QuorumToolOptions, features: tuple[str, ...], unsafe: bool, dry_run: bool) -> None:
    """Downgrade one or more feature flags."""
    from kraft.admin_client.admin_features import UpgradeType

    kind = UpgradeType.UNSAFE_DOWNGRADE if unsafe else UpgradeType.SAFE_DOWNGRADE
    _run_update(options, "downgrade", _parse_updates(features, kind), dry_run)


@features_group.command("disable")
@click.option("--feature", "features", multiple=True, metavar="FEATURE", help="A feature flag to disable.")
@click.option("--unsafe", is_flag=True, help="Disable this feature flag even if it may irreversibly destroy metadata.")
@click.option("--dry-run", is_flag=True, help="Perform a dry-run of this disable operation.")
@click.pass_obj
def disable_command(options: QuorumToolOptions, features: tuple[str, ...], unsafe: bool, dry_run: bool) -> None:
    """Disable one or more feature flags. This is the same as downgrading the version to zero."""
    from kraft.admin_client.admin_features import FeatureUpdate, UpgradeType

    kind = UpgradeType.UNSAFE_DOWNGRADE if unsafe else UpgradeType.SAFE_DOWNGRADE
    updates: dict[str, FeatureUpdate] = {}
    for name in features:
        if name in updates:
            _fail(f"Feature {name} was specified more than once.")
        updates[name] = FeatureUpdate(0, kind)
    _run_update(options, "disable", updates, dry_run)
