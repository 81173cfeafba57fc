"""The optional packages a bench needs, checked before it runs.

``kraft bench chaos`` takes the ``[chaos]`` extra: pyfuse3 (the power-loss
file system, for the ``power-loss`` and ``lying-disk`` nemeses) and
matplotlib (the timeline picture). A run needs pyfuse3 only when it mounts
a FUSE disk; without it the command says so in one line with the fix, exit
1 (the tool refuses), instead of a traceback deep in a run. No run needs
matplotlib: without it the run draws no timeline and says so in its notes.
The check finds the packages without importing them (``kraft bench chaos``
imports each only where it is used).
"""

from __future__ import annotations

import importlib.util

import click

__all__ = ["CHAOS_EXTRA", "CHAOS_NOTE", "missing_line", "require_extra"]

#: The ``[chaos]`` extra of pyproject.toml: the module each package installs.
CHAOS_EXTRA = ("pyfuse3", "matplotlib")
#: What installing the chaos extra takes besides pip (pyfuse3 builds against libfuse3).
CHAOS_NOTE = "pyfuse3 builds against libfuse3: Debian's fuse3 and libfuse3-dev"


def _missing(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except (ImportError, ValueError):  # hidden as None in sys.modules, or a broken install
        return True


def missing_line(extra: str, modules: tuple[str, ...], note: str) -> str | None:
    """The line saying which of ``modules`` are not installed and the fix, or None when all are."""
    missing = [m for m in modules if _missing(m)]
    if not missing:
        return None
    return (f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not installed: "
            f"pip install 'kraft[{extra}]' ({note})")


def require_extra(extra: str, modules: tuple[str, ...], note: str) -> None:
    """Refuse (one line, exit 1) when a module of ``extra`` is not installed."""
    line = missing_line(extra, modules, note)
    if line is not None:
        raise click.ClickException(line)
