"""Run the import contracts (import-linter) and the type checker (mypy) over
the whole ``kraft`` package, as CI does: ``.venv/bin/python -m tests.static_checks``.

Why a helper: ``kraft.wire``, ``kraft.records``, ... live in top-level folders
(``wire/``, ``records/``, pyproject's ``package-dir``), and the editable
install maps them with an import hook that neither grimp nor mypy follows.
Both are therefore run on a *link tree*: a temporary ``kraft/`` whose
directories mirror the installed package and whose files are symlinks to
the real ones. Reports name the real files again (``wire/codec.py``, not
``kraft/wire/codec.py``), so an editor can jump to them.

The contracts and mypy's settings live in pyproject.toml
(``[tool.importlinter]``, ``[tool.mypy]``); this module only lays out the tree.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = REPO / "pyproject.toml"


def package_dirs() -> dict[str, Path]:
    """pyproject's ``package-dir``: import name -> real folder."""
    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    return {name: REPO / folder for name, folder in config["tool"]["setuptools"]["package-dir"].items()}


def link_tree(dest: Path) -> Path:
    """Lay the installed package out under ``dest`` (``dest/kraft/wire/...``),
    every file a symlink to its source; returns ``dest``."""
    for name, folder in package_dirs().items():
        target_root = dest.joinpath(*name.split("."))
        for path in folder.rglob("*"):
            if "__pycache__" in path.parts or path.is_dir():
                continue
            link = target_root / path.relative_to(folder)
            link.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(path, link)
    return dest


def real_path(reported: str, tree: Path) -> str:
    """Map a path inside the link tree back to the repository's file."""
    text = reported
    for name, folder in sorted(package_dirs().items(), key=lambda item: -len(item[0])):
        prefix = str(tree.joinpath(*name.split("."))) + os.sep
        short = os.path.join(*name.split(".")) + os.sep
        for p in (prefix, short):
            if p in text:
                text = text.replace(p, os.path.relpath(folder, REPO) + os.sep)
    return text


def _python() -> str:
    return sys.executable


def run_import_linter(tree: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` with pyproject's contracts, on the link tree."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    code = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
    return subprocess.run(
        [_python(), "-c", code, str(PYPROJECT), "--no-cache", "--no-logo"],
        cwd=tree, env=env, capture_output=True, text=True, timeout=600, check=False)


def run_mypy(tree: Path) -> subprocess.CompletedProcess[str]:
    """mypy with pyproject's ``[tool.mypy]``, over the package in the link tree."""
    env = {k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "PYTHONPATH")}
    return subprocess.run(
        [_python(), "-m", "mypy", "--config-file", str(PYPROJECT), "--cache-dir", str(tree / ".mypy_cache"),
         "-p", "kraft"],
        cwd=tree, env=env, capture_output=True, text=True, timeout=1200, check=False)


def main(argv: list[str] | None = None) -> int:
    """Run both checks (or the one named: ``imports`` / ``types``); 0 when both pass."""
    which = set(argv if argv is not None else sys.argv[1:]) or {"imports", "types"}
    failed = 0
    with tempfile.TemporaryDirectory(prefix="kraft-static-") as tmp:
        tree = link_tree(Path(tmp))
        if "imports" in which:
            result = run_import_linter(tree)
            print(real_path(result.stdout + result.stderr, tree).rstrip())
            failed |= result.returncode != 0
        if "types" in which:
            result = run_mypy(tree)
            print(real_path(result.stdout + result.stderr, tree).rstrip())
            failed |= result.returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
