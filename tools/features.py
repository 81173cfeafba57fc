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
``kraft quorum`` (:mod:`kraft.tools.quorum`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from kraft.tools.quorum import QuorumToolOptions, ToolError, run_tool

if TYPE_CHECKING:
    from kraft.client.admin import AdminSession

__all__ = [
    "features_group",
    "FeatureLine",
    "parse_name_and_level",
    "format_describe",
    "format_update",
]

#: Kafka's ``FeatureUpdate.UpgradeType`` codes.
UPGRADE = 1
SAFE_DOWNGRADE = 2
UNSAFE_DOWNGRADE = 3


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


# ---------------------------------------------------------------- talking to the cluster


async def _describe(session: AdminSession) -> tuple[list[FeatureLine], int | None]:
    """ApiVersions to the bootstrap addresses, in order, until one answers."""
    from kraft.messages.errors import KraftProtocolError
    from kraft.messages.generated.api_versions_request import ApiVersionsRequest
    from kraft.wire.apis import ApiKey
    from kraft.wire.client import CLIENT_SOFTWARE_NAME, CLIENT_SOFTWARE_VERSION, PeerClientError
    from kraft.wire.errors import ErrorCode

    def build(version: int) -> ApiVersionsRequest:
        return ApiVersionsRequest(client_software_name=CLIENT_SOFTWARE_NAME,
                                  client_software_version=CLIENT_SOFTWARE_VERSION)

    failures = []
    for address in session.bootstrap.addresses:
        try:
            _, body = await session.request(address, ApiKey.API_VERSIONS, build, max_version=4)
        except (PeerClientError, KraftProtocolError) as e:
            failures.append(str(e))
            continue
        if body.error_code != ErrorCode.NONE:
            raise ToolError(f"ApiVersions to {address[0]}:{address[1]} failed: {ErrorCode.name_of(body.error_code)}")
        finalized = {f.name: f.max_version_level for f in body.finalized_features}
        lines = [FeatureLine(f.name, f.min_version, f.max_version, finalized.get(f.name, 0))
                 for f in body.supported_features]
        epoch = body.finalized_features_epoch if body.finalized_features_epoch >= 0 else None
        return lines, epoch
    raise ToolError(f"Cannot reach any of the bootstrap {session.bootstrap.kind}: " + "; ".join(failures))


async def _update(session: AdminSession, updates: dict[str, tuple[int, int]],
                  dry_run: bool) -> dict[str, str | None]:
    """UpdateFeatures to the active controller: each feature's failure
    message (None on success), as ``KafkaAdminClient.updateFeatures``
    completes each feature's future."""
    from kraft.messages.generated import update_features_request as uf_req
    from kraft.wire.apis import ApiKey
    from kraft.wire.errors import ErrorCode

    def build(version: int) -> uf_req.UpdateFeaturesRequest:
        if version == 0 and (dry_run or any(t != UPGRADE for _, t in updates.values())):
            # v0 has neither ValidateOnly nor UpgradeType.
            raise ToolError("The controller only speaks UpdateFeatures v0, which cannot express this update")
        return uf_req.UpdateFeaturesRequest(
            timeout_ms=session.settings.request_timeout_ms,
            feature_updates=[uf_req.FeatureUpdateKey(feature=name, max_version_level=level, upgrade_type=kind)
                             for name, (level, kind) in updates.items()],
            validate_only=dry_run)

    async def attempt() -> tuple[int, Any] | str:
        sent = await session.send_to_leader(ApiKey.UPDATE_FEATURES, build, max_version=2)
        if isinstance(sent, str):
            return sent
        view, version, body = sent
        if body.error_code == ErrorCode.NOT_CONTROLLER:
            return f"node {view.controller_id} answered NOT_CONTROLLER: {body.error_message}"
        return version, body

    _, body = await session.until_deadline("the active controller", attempt)
    if body.error_code != ErrorCode.NONE:
        message = body.error_message or ErrorCode.name_of(body.error_code)
        return {name: message for name in updates}
    results = {r.feature: r for r in body.results}
    out: dict[str, str | None] = {}
    for name in updates:
        result = results.get(name)
        if result is None or result.error_code == ErrorCode.NONE:
            # v2 answers a success without per-feature results.
            out[name] = None
        else:
            out[name] = result.error_message or ErrorCode.name_of(result.error_code)
    return out


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
@click.pass_obj
def describe_command(options: QuorumToolOptions) -> None:
    """Describes the current active feature flags."""
    bootstrap, settings = _resolve(options)

    async def main() -> str:
        from kraft.client.admin import AdminSession

        async with AdminSession(bootstrap, settings) as session:
            lines, epoch = await _describe(session)
        return format_describe(lines, epoch)

    run_tool(main)


def _run_update(options: QuorumToolOptions, op: str, updates: dict[str, tuple[int, int]], dry_run: bool) -> None:
    bootstrap, settings = _resolve(options)
    if not updates:
        _fail(f"You must specify at least one feature to {op}")

    async def main() -> str:
        from kraft.client.admin import AdminSession

        async with AdminSession(bootstrap, settings) as session:
            errors = await _update(session, updates, dry_run)
        report, failures = format_update(op, {name: level for name, (level, _) in updates.items()}, errors,
                                         dry_run)
        if failures:
            click.echo(report, nl=False)
            raise ToolError(f"{failures} out of {len(updates)} operation(s) failed.")
        return report

    run_tool(main)


def _parse_updates(features: Sequence[str], kind: int) -> dict[str, tuple[int, int]]:
    updates: dict[str, tuple[int, int]] = {}
    try:
        for text in features:
            name, level = parse_name_and_level(text)
            if name in updates:
                raise ToolError(f"Feature {name} was specified more than once.")
            updates[name] = (level, kind)
    except ToolError as e:
        _fail(str(e))
    return updates


@features_group.command("version-mapping")
@click.option("--release-version", help="The release version to use for the corresponding feature mapping. "
              "The default is the latest stable metadata version.")
def version_mapping_command(release_version: str | None) -> None:
    """Look up the corresponding features for a given metadata version.
    Using the command with no --release-version argument will return the
    mapping for the latest stable metadata version"""
    from kraft.records.bootstrap import FormatError
    from kraft.tools.feature_versions import version_mapping

    try:
        click.echo(version_mapping(release_version), nl=False)
    except FormatError as e:
        _fail(str(e))


@features_group.command("feature-dependencies")
@click.option("--feature", "features", multiple=True, metavar="FEATURE=LEVEL",
              help="The features and their versions to look up dependencies for, in feature=version format. "
                   "For example: `metadata.version=5`.")
def feature_dependencies_command(features: tuple[str, ...]) -> None:
    """Look up dependencies for a given feature version. If the feature is
    not known or the version not yet defined, an error is thrown. Multiple
    features can be specified."""
    from kraft.records.bootstrap import FormatError
    from kraft.tools.feature_versions import feature_dependencies

    try:
        click.echo(feature_dependencies(features), nl=False)
    except FormatError as e:
        _fail(str(e))


@features_group.command("upgrade")
@click.option("--feature", "features", multiple=True, metavar="FEATURE=LEVEL",
              help="A feature upgrade we should perform, in feature=level format. For example: `kraft.version=1`.")
@click.option("--dry-run", is_flag=True, help="Validate this upgrade, but do not perform it.")
@click.pass_obj
def upgrade_command(options: QuorumToolOptions, features: tuple[str, ...], dry_run: bool) -> None:
    """Upgrade one or more feature flags."""
    _run_update(options, "upgrade", _parse_updates(features, UPGRADE), dry_run)


@features_group.command("downgrade")
@click.option("--feature", "features", multiple=True, metavar="FEATURE=LEVEL",
              help="A feature downgrade we should perform, in feature=level format.")
@click.option("--unsafe", is_flag=True, help="Perform this downgrade even if it may irreversibly destroy metadata.")
@click.option("--dry-run", is_flag=True, help="Validate this downgrade, but do not perform it.")
@click.pass_obj
def downgrade_command(options: QuorumToolOptions, features: tuple[str, ...], unsafe: bool, dry_run: bool) -> None:
    """Downgrade one or more feature flags."""
    kind = UNSAFE_DOWNGRADE if unsafe else SAFE_DOWNGRADE
    _run_update(options, "downgrade", _parse_updates(features, kind), dry_run)


@features_group.command("disable")
@click.option("--feature", "features", multiple=True, metavar="FEATURE", help="A feature flag to disable.")
@click.option("--unsafe", is_flag=True, help="Disable this feature flag even if it may irreversibly destroy metadata.")
@click.option("--dry-run", is_flag=True, help="Perform a dry-run of this disable operation.")
@click.pass_obj
def disable_command(options: QuorumToolOptions, features: tuple[str, ...], unsafe: bool, dry_run: bool) -> None:
    """Disable one or more feature flags. This is the same as downgrading the version to zero."""
    kind = UNSAFE_DOWNGRADE if unsafe else SAFE_DOWNGRADE
    updates: dict[str, tuple[int, int]] = {}
    for name in features:
        if name in updates:
            _fail(f"Feature {name} was specified more than once.")
        updates[name] = (0, kind)
    _run_update(options, "disable", updates, dry_run)
