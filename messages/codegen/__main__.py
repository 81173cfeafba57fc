"""``python -m kraft.messages.codegen SPEC_DIR... OUT``.

Without arguments, regenerates the project's own codecs: messages/specs ->
messages/generated.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kraft.messages.codegen.generate import generate

HERE = Path(__file__).resolve().parent.parent


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
def main(paths: tuple[Path, ...]) -> None:
    """Generate Python codecs from Kafka-format JSON message specs.

    PATHS are one or more spec directories followed by the output directory.
    """
    if not paths:
        spec_dirs, out = [HERE / "specs"], HERE / "generated"
    elif len(paths) < 2:
        raise click.UsageError("give SPEC_DIR... OUT (or nothing, to regenerate the project's codecs)")
    else:
        spec_dirs, out = list(paths[:-1]), paths[-1]
    for d in spec_dirs:
        if not d.is_dir():
            raise click.UsageError(f"not a directory: {d}")
    changed = generate(spec_dirs, out)
    click.echo(f"{len(changed)} file(s) changed in {out}", err=True)


if __name__ == "__main__":
    sys.exit(main())
