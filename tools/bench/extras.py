"""The optional packages a bench needs, checked before it runs.

``kraft bench chaos`` needs the ``[chaos]`` extra: pyfuse3 (the power-loss
file system) and matplotlib (the timeline picture). Without them it says so
in one line with the fix, exit 1 (the tool refuses), instead of a
traceback deep in a run. The check finds the packages without importing
them (``kraft bench chaos`` imports each only where it is used).
"""

from __future__ import annotations

import importlib.util

import click

__all__ = ["CHAOS_EXTRA", "CHAOS_NOTE", "require_extra"]

#: The ``[chaos]`` extra of pyproject.toml: the module each package installs.
CHAOS_EXTRA = ("pyfuse3", "matplotlib")
#: What installing the chaos extra takes besides pip (pyfuse3 builds against libfuse3).
CHAOS_NOTE = "pyfuse3 builds against libfuse3: Debian's fuse3 and libfuse3-dev"


def _missing(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except (ImportError, ValueError):  # hidden as None in sys.modules, or a broken install
        return True


def require_extra(extra: str, modules: tuple[str, ...], note: str) -> None:
    """Refuse (one line, exit 1) when a module of ``extra`` is not installed."""
    missing = [m for m in modules if _missing(m)]
    if missing:
        raise click.ClickException(f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not installed: "
                                   f"pip install 'kraft[{extra}]' ({note})")
