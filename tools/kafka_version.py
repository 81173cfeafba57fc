"""``--kafka-version X.Y``: the option every Kafka look-alike tool takes.

It goes on a group (``kraft storage --kafka-version 4.0 format ...``) and on
its subcommands (``kraft storage format --kafka-version 4.0 ...``); the one
given last wins, then :data:`kraft.kafka_release.ENV_VAR`, then the newest
release (:data:`kraft.kafka_release.LATEST`). An unknown version is one line
on stderr and exit status 2 (a usage error) from the option, 3 (a
configuration error) from the environment variable.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

import click

from kraft import errors
from kraft.kafka_release import ENV_VAR, LATEST, KafkaRelease, UnknownKafkaVersion, kafka_release, known_versions

__all__ = ["kafka_version_option", "current_release"]

F = TypeVar("F", bound=Callable[..., Any])
_META_KEY = "kraft.kafka_release"


def _refuse(exc: UnknownKafkaVersion, code: int) -> NoReturn:
    click.echo(f"Error: {exc}", err=True)
    raise click.exceptions.Exit(code)


def _store(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    if value is None:
        return
    try:
        ctx.meta[_META_KEY] = kafka_release(value)
    except UnknownKafkaVersion as exc:
        _refuse(exc, errors.EXIT_USAGE)


def kafka_version_option(f: F) -> F:
    """Add ``--kafka-version`` to a command or group (read it with :func:`current_release`)."""
    return click.option(
        "--kafka-version", metavar="X.Y", default=None, expose_value=False, callback=_store, is_eager=True,
        help=f"Print as this Kafka release's tool prints ({known_versions()}). Default: ${ENV_VAR}, "
             f"else {LATEST.name}, the newest.",
    )(f)


def current_release() -> KafkaRelease:
    """The release the running command prints as: ``--kafka-version``, else
    ``$KRAFT_KAFKA_VERSION``, else the newest."""
    ctx = click.get_current_context(silent=True)
    if ctx is not None and _META_KEY in ctx.meta:
        release: KafkaRelease = ctx.meta[_META_KEY]
        return release
    try:
        return kafka_release()
    except UnknownKafkaVersion as exc:
        _refuse(exc, errors.EXIT_CONFIG)

