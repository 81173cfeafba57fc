"""``kraft storage recover-quorum``: bring back a quorum that lost its
majority for good, from one stopped surviving voter (see
:mod:`kraft.doctor.quorum_recovery` for what it writes and why).

    kraft storage recover-quorum --config server.properties            # print the plan
    kraft storage recover-quorum --config server.properties --unsafe   # carry it out

Without ``--unsafe`` nothing is written. Before writing, the other voters
are asked over the network (ApiVersions on their voter-set endpoints):
if any answers, the quorum is not lost and the command refuses
(``--offline`` skips the check, for a host cut off from the others).
Every old voter this node knows an address for (the voter set's
endpoints, ``controller.quorum.voters``, the bootstrap servers) is asked;
one known by id only makes the command refuse without ``--offline``. On a
static quorum the plan includes the config edit (``controller.quorum.voters``
out, ``controller.quorum.bootstrap.servers`` naming this node in);
``--rewrite-config`` makes it, keeping a copy. Run again after a recovery,
it finds nothing to do and says so. Refusals print one line on stderr and
exit 1.

    kraft storage recover-quorum --config server.properties --endpoints 1@h1:9093,2@h2:9093,3@h3:9093 [--unsafe]

A dynamic quorum whose controllers all moved to new hosts: run on every
stopped voter, it writes where to dial the voters until the elected leader
records their new endpoints through Raft (see
:mod:`kraft.doctor.endpoints_recovery`); the log is not changed.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from kraft.config import NodeConfig
    from kraft.doctor.quorum_recovery import NothingToRecover, RecoveryPlan

__all__ = ["recover_quorum_command"]


def _fail(message: str) -> None:
    click.echo(message, err=True)
    sys.exit(1)


@click.command("recover-quorum")
@click.option("--config", "-c", "config_path", required=True, type=click.Path(path_type=Path, dir_okay=False),
              help="The surviving controller's server.properties.")
@click.option("--unsafe", is_flag=True,
              help="Write the new single-voter set (without it, only the plan is printed).")
@click.option("--offline", is_flag=True,
              help="Skip the network check that no other voter is alive (the operator vouches for it).")
@click.option("--backup-dir", type=click.Path(path_type=Path, file_okay=False),
              help="Where to copy what changes (default: <metadata.log.dir>.recover-quorum-backup-<UTC time>).")
@click.option("--rewrite-config", is_flag=True,
              help="On a static quorum: replace controller.quorum.voters in --config by "
                   "controller.quorum.bootstrap.servers (the old file is kept beside it).")
@click.option("--timeout-ms", type=click.IntRange(min=1), default=3000, show_default=True,
              help="How long to wait for each other voter's answer in the network check.")
@click.option("--endpoints", metavar="ID@HOST:PORT,...",
              help="Dynamic quorum whose controllers moved: the voters' new controller endpoints (run on every "
                   "stopped voter; the log is not changed).")
def recover_quorum_command(config_path: Path, unsafe: bool, offline: bool, backup_dir: Path | None,
                           rewrite_config: bool, timeout_ms: int, endpoints: str | None) -> None:
    """Make this stopped voter the only voter of a new voter set (a quorum that lost its majority),
    or, with --endpoints, give the voters of a moved quorum their new addresses."""
    from kraft.config import NodeConfig
    from kraft.dirlock import DirectoryLockedError as DirectoryLocked
    from kraft.doctor.quorum_recovery import (
        NothingToRecover,
        RecoveryRefused,
        apply_config_edit,
        apply_recovery,
        plan_recovery,
    )

    import logging

    # A Kafka server.properties has many keys a kraft node does not read: not the tool's business.
    logging.getLogger("kraft.config").setLevel(logging.ERROR)
    # A bad config is the CLI's one line and exit code 3 (ConfigError), as in every tool.
    config = NodeConfig.load(config_path)
    if endpoints is not None:
        _endpoints(config, endpoints, unsafe=unsafe, backup_dir=backup_dir)
        return
    try:
        plan = plan_recovery(config, config_path=config_path, backup_dir=backup_dir)
    except RecoveryRefused as e:
        _fail(str(e))
        return
    except NothingToRecover as e:
        _already_recovered(e, rewrite_config=rewrite_config)
        return
    click.echo(plan.describe(), nl=False)
    if not unsafe:
        click.echo("Nothing was changed. Run again with --unsafe to carry out this plan.")
        return
    if plan.config_edit is not None and not rewrite_config:
        _fail(f"Refusing: controller.quorum.voters is set in {config_path} (a static quorum): once recovered the node "
              "must find its voters in the log, so its config must name controller.quorum.bootstrap.servers instead. "
              "Add --rewrite-config to make that edit (shown in the plan; a copy is kept), or make it by hand.")
        return
    if not offline:
        _check_quorum_lost(plan, config, timeout_ms)
    try:
        for line in apply_recovery(plan):
            click.echo(line)
        if plan.config_edit is not None:
            for line in apply_config_edit(plan.config_edit):
                click.echo(line)
    except (RecoveryRefused, DirectoryLocked) as e:
        _fail(str(e))
        return
    except OSError as e:
        # Fail-stop: what was written is in the backup's twin; say where.
        _fail(f"I/O error while recovering ({e}): the original files are in {plan.backup_dir}; "
              "restore them before trying again.")
        return
    click.echo(f"Done. Start node {plan.node_id}: it will elect itself in epoch {plan.new_epoch + 1} or later.")


def _already_recovered(e: NothingToRecover, *, rewrite_config: bool) -> None:
    """A second run: the log already names this node alone. Only a static
    config left behind (the first run's edit not made) may remain to do."""
    from kraft.doctor.quorum_recovery import apply_config_edit

    click.echo(str(e))
    if e.config_edit is not None:
        click.echo(f"{e.config_edit.path} still names static voters; the edit it needs:")
        for line in e.config_edit.lines():
            click.echo(f"  {line}")
        if rewrite_config:
            for line in apply_config_edit(e.config_edit):
                click.echo(line)
        else:
            click.echo("Run again with --rewrite-config to make it (a copy of the file is kept).")


def _check_quorum_lost(plan: RecoveryPlan, config: NodeConfig, timeout_ms: int) -> None:
    """The network check: every other voter is asked, and none may answer
    (exit 1 otherwise, or when a voter has no known address)."""
    import trio

    from kraft.doctor.quorum_recovery import live_voters, probe_targets

    targets, unknown = probe_targets(plan, config)
    if unknown:
        _fail(f"Refusing: no address is known for old voter{'s' if len(unknown) > 1 else ''} "
              f"{', '.join(map(str, unknown))} (the voter set names {'them' if len(unknown) > 1 else 'it'} by id "
              "only), so this command cannot check that the quorum is lost. Make sure they are down for good, "
              "then use --offline.")
        return
    alive = trio.run(live_voters, plan, config, timeout_ms)
    if alive:
        _fail(f"Refusing: other voters are alive ({', '.join(alive)}): the quorum is not lost. Stop them "
              "for good first, or use --offline if they can never come back.")
        return
    click.echo(f"Asked {', '.join(label for label, _, _ in targets) or 'no other address'}: none answers.")


def _endpoints(config: object, spec: str, *, unsafe: bool, backup_dir: Path | None) -> None:
    from kraft.config import NodeConfig
    from kraft.dirlock import DirectoryLockedError
    from kraft.doctor.endpoints_recovery import apply_endpoints, plan_endpoints
    from kraft.doctor.quorum_recovery import NothingToRecover, RecoveryRefused

    assert isinstance(config, NodeConfig)
    try:
        plan = plan_endpoints(config, spec, backup_dir=backup_dir)
    except RecoveryRefused as e:
        _fail(str(e))
        return
    except NothingToRecover as e:
        click.echo(str(e))
        return
    click.echo(plan.describe(), nl=False)
    if not unsafe:
        click.echo("Nothing was changed. Run again with --unsafe to carry out this plan.")
        return
    try:
        for line in apply_endpoints(plan):
            click.echo(line)
    except (RecoveryRefused, DirectoryLockedError) as e:
        _fail(str(e))
        return
    except OSError as e:
        _fail(f"I/O error while writing the overrides ({e}): quorum-state is copied in {plan.backup_dir}; "
              "remove the overrides file and run again.")
        return
    click.echo(f"Done. Start node {plan.node_id} (and every other voter, each given the same --endpoints).")
