"""No two modules of the installed package tree share a base name (issue 34:
``describe.py``, ``codec.py`` and ``features.py`` each named two or three
different modules, so a file name in a traceback, an editor tab or a review
did not say which one it was).

The tree is what installs under ``kraft`` (pyproject's ``package-dir``
maps ``wire/``, ``records/``, ``messages/`` and ``tools/`` into it).
Python's per-package idioms are exempt: ``__init__``, ``__main__`` and the
package's own ``errors``.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: Names every package may have: the package itself, its ``python -m``
#: entry point, and its errors (Python's idiom for a package's exceptions).
IDIOMS = frozenset({"__init__", "__main__", "errors"})


def _package_folders() -> dict[str, Path]:
    """Each package under ``kraft`` and the folder it is installed from."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    dirs: dict[str, str] = config["package-dir"]
    folders = {}
    for pkg in config["packages"]:
        if pkg != "kraft" and not pkg.startswith("kraft."):
            continue
        prefix = max((name for name in dirs if pkg == name or pkg.startswith(name + ".")), key=len)
        folders[pkg] = REPO / dirs[prefix] / Path(*pkg[len(prefix):].strip(".").split(".") if pkg != prefix else ())
    return folders


def modules_by_base_name() -> dict[str, set[str]]:
    """Each module base name, with the dotted names of the modules that have it."""
    names: dict[str, set[str]] = {}
    for pkg, folder in _package_folders().items():
        for path in folder.glob("*.py"):
            if path.stem not in IDIOMS:
                names.setdefault(path.stem, set()).add(f"{pkg}.{path.stem}")
    return names


def test_no_two_modules_share_a_base_name() -> None:
    shared = {name: sorted(modules) for name, modules in modules_by_base_name().items()
              if len(modules) > 1}
    assert not shared, f"modules sharing a base name (rename one so the name says which): {shared}"


def test_the_scan_sees_the_whole_tree() -> None:
    # A walk that missed the folders mapped by package-dir would pass the
    # test above trivially.
    names = modules_by_base_name()
    assert names["framing"] == {"kraft.wire.framing"}
    assert names["dump_log"] == {"kraft.tools.dump_log"}
    assert names["config"] == {"kraft.config"}
    assert names["witness_policy"] == {"kraft.raft.witness_policy"}
    assert "errors" not in names and "__init__" not in names
