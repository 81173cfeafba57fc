"""Run the import contracts (import-linter), the private-name check and the
type checker (mypy) over the whole ``kraft`` package, as CI does:
``.venv/bin/python -m tests.static_checks`` (or one of ``imports``,
``privates``, ``types``).

Why a helper: ``kraft.wire``, ``kraft.records``, ... live in top-level folders
(``wire/``, ``records/``, pyproject's ``package-dir``), and the editable
install maps them with an import hook that neither grimp nor mypy follows.
Both are therefore run on a *link tree*: a temporary ``kraft/`` whose
directories mirror the installed package and whose files are symlinks to
the real ones. Reports name the real files again (``wire/codec.py``, not
``kraft/wire/codec.py``), so an editor can jump to them.

The contracts and mypy's settings live in pyproject.toml
(``[tool.importlinter]``, ``[tool.mypy]``); this module only lays out the
tree. The private-name check (:func:`private_name_uses`) is this module's own.
"""

from __future__ import annotations

import ast
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


# ---------------------------------------------------------------- private names

#: Import roots whose names the check polices: the package (its folders
#: under their import names), PySpark's discovery shim and the tests.
_OWN_ROOTS = ("kraft", "pyspark_kraft", "tests")


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _own(module: str) -> bool:
    return module.split(".", 1)[0] in _OWN_ROOTS


def _tested_module_allows(path: Path, module: str) -> bool:
    """A test may use the private names of the module it tests: the one whose
    last name starts its file name (``tests/records/test_compression.py`` and
    ``kraft.records.compression``, ``test_cli_startup.py`` and ``kraft.cli``)."""
    if "tests" not in path.parts or not path.name.startswith("test_") or not module.startswith("kraft"):
        return False
    return path.stem.removeprefix("test_").startswith(module.rsplit(".", 1)[-1])


def private_name_uses(path: Path, source: str, package: str) -> list[str]:
    """The private names ``path`` takes from another module of the project:
    ``from x import _y`` (a private function, class, constant or module) and
    ``x._y`` on a module ``x`` it imported. One line each, ``path:line: what``.
    ``package`` is the file's own package, to resolve relative imports.

    A module's private names are its own: another module that needs one
    gets it under a public name (moved where it belongs if it is shared).
    Dunder names are public. The one exception is a test using the
    private names of the module it tests (:func:`_tested_module_allows`);
    a test never uses another test module's private helpers."""
    tree = ast.parse(source, str(path))
    found: list[str] = []
    modules: dict[str, str] = {}  # local name -> the module it is bound to

    def absolute(node: ast.ImportFrom) -> str:
        if node.level == 0:
            return node.module or ""
        base = package.split(".")[: len(package.split(".")) - node.level + 1]
        return ".".join([*base, *([node.module] if node.module else [])])

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = absolute(node)
            if not _own(module):
                continue
            for alias in node.names:
                if _is_private(alias.name):
                    if not _tested_module_allows(path, f"{module}.{alias.name}") \
                            and not _tested_module_allows(path, module):
                        found.append(f"{path}:{node.lineno}: from {module} import {alias.name}")
                else:
                    # Perhaps a module (``from kraft.tools.spark import columnar``).
                    modules[alias.asname or alias.name] = f"{module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if _own(alias.name):
                    modules[alias.asname or alias.name] = alias.name if alias.asname else alias.name.split(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _is_private(node.attr) and isinstance(node.value, ast.Name) \
                and node.value.id in modules and not _tested_module_allows(path, modules[node.value.id]):
            found.append(f"{path}:{node.lineno}: {modules[node.value.id]}.{node.attr}")
    return found


def check_private_names() -> list[str]:
    """:func:`private_name_uses` over the package's folders and the tests."""
    sources: list[tuple[Path, str]] = []
    for name, folder in package_dirs().items():
        for path in sorted(folder.rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            parts = path.relative_to(folder).parent.parts
            sources.append((path, ".".join([name, *parts])))
    for path in sorted((REPO / "tests").rglob("*.py")):
        sources.append((path, ".".join(path.relative_to(REPO).parent.parts)))
    found: list[str] = []
    seen: set[Path] = set()
    for path, package in sources:
        if path in seen:  # tools/spark/pyspark_kraft is two packages
            continue
        seen.add(path)
        found += private_name_uses(path.relative_to(REPO), path.read_text(encoding="utf-8"), package)
    return found


def main(argv: list[str] | None = None) -> int:
    """Run the checks (or the ones named: ``imports`` / ``privates`` / ``types``); 0 when all pass."""
    which = set(argv if argv is not None else sys.argv[1:]) or {"imports", "privates", "types"}
    failed = 0
    if "privates" in which:
        uses = check_private_names()
        print("\n".join([*uses, f"Private names used across modules: {len(uses)}"]))
        failed |= bool(uses)
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
