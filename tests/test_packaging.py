"""Every package folder is installed: pyproject.toml lists each one under the
one import root ``kraft`` (a missing entry breaks non-editable installs)."""

from __future__ import annotations

import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_every_package_is_listed() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    dirs = config["package-dir"]
    found = set()
    for pkg, folder in dirs.items():
        root = REPO / folder
        for init in root.rglob("__init__.py"):
            rel = init.parent.relative_to(root)
            if rel.parts and rel.parts[0] in {Path(f).name for f in dirs.values()} and pkg == "kraft":
                continue
            found.add(".".join([pkg, *rel.parts]))
    assert found == listed, f"missing from pyproject: {sorted(found - listed)}; listed but absent: {sorted(listed - found)}"
