"""Every package folder is installed: pyproject.toml lists each one under the
one import root ``kraft`` (a missing entry breaks non-editable installs). The
tests' harnesses (the Kafka-played node, the single-replica raft context) live
under tests/ and ship with none of it."""

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


def _package_inits() -> list[tuple[str, Path]]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    out = []
    for pkg in config["packages"]:
        prefix = max((name for name in config["package-dir"] if pkg == name or pkg.startswith(name + ".")), key=len)
        folder = REPO / config["package-dir"][prefix]
        out.append((pkg, folder.joinpath(*pkg[len(prefix):].strip(".").split(".")) / "__init__.py"
                    if pkg != prefix else folder / "__init__.py"))
    return out


def test_every_package_says_what_it_is_and_what_it_may_import() -> None:
    """A newcomer opens ``__init__.py``: its docstring's first line says what
    the package is, the next (after at most one blank line) what it may import."""
    import ast

    missing = []
    for pkg, init in _package_inits():
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")), clean=True) or ""
        lines = doc.splitlines()
        rule = next((line for line in lines[1:3] if line.strip()), "")
        if not lines or not lines[0].strip() or not rule.startswith(("May import", "Imports")):
            missing.append(f"{pkg} ({init.relative_to(REPO)})")
    assert not missing, f"packages whose docstring lacks the two lines: {missing}"


def test_the_built_package_is_typed(tmp_path: Path) -> None:
    """PEP 561: ``py.typed`` ships in the package (each folder mapped by
    package-dir has one), so users' type checkers read our annotations."""
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-c", "from setuptools import setup; setup()", "-q", "build_py",
                             "--build-lib", str(tmp_path)], cwd=REPO, capture_output=True, text=True, timeout=300,
                            check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    for package in config["package-dir"]:
        assert (tmp_path.joinpath(*package.split(".")) / "py.typed").is_file(), package
    assert (tmp_path / "kraft" / "wire" / "codec.py").is_file()


#: The tests' harnesses, by the modules and names they had in the package
#: (issue 45): none may come back into it.
TEST_HARNESS_MODULES = ("kraft.tools.kafka_played_node", "kraft.tools.bench.kafka_played",
                        "kraft.tools.bench.witness_handover", "kraft.sim.context")
TEST_HARNESS_NAMES = {"RaftTestContext", "KAFKA_4_0_CONTROLLER_APIS"}


def _harness_uses(source: str) -> list[str]:
    """Where ``source`` imports ``tests`` or defines a harness's name, as ``line: what``."""
    import ast

    found = []
    for node in ast.walk(ast.parse(source)):
        imported = []
        if isinstance(node, ast.Import):
            imported = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            imported = [node.module or ""]
        found += [f"{node.lineno}: imports {name}" for name in imported if name.split(".")[0] == "tests"]
        defined = []
        if isinstance(node, ast.ClassDef):
            defined = [node.name]
        elif isinstance(node, ast.Assign):
            defined = [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            defined = [node.target.id]
        found += [f"{node.lineno}: defines {name}" for name in defined if name in TEST_HARNESS_NAMES]
    return found


def test_a_harness_use_is_found() -> None:
    source = ("from tests.node.kafka_played import LAUNCHER\nimport tests.harness\n"
              "class RaftTestContext: ...\nKAFKA_4_0_CONTROLLER_APIS: dict[int, int] = {}\n")
    assert _harness_uses(source) == ["1: imports tests.node.kafka_played", "2: imports tests.harness",
                                     "3: defines RaftTestContext", "4: defines KAFKA_4_0_CONTROLLER_APIS"]


def test_the_package_ships_no_test_harness() -> None:
    """No played-Kafka node and no raft test context in the package, and no
    module of it imports ``tests``: they live in tests/node/ and tests/harness/."""
    import importlib.util

    import kraft.sim
    from tests.static_checks import package_dirs

    assert [m for m in TEST_HARNESS_MODULES if importlib.util.find_spec(m) is not None] == []
    assert not hasattr(kraft.sim, "RaftTestContext")
    found = [f"{path.relative_to(REPO)}:{use}" for folder in package_dirs().values()
             for path in sorted(folder.rglob("*.py")) for use in _harness_uses(path.read_text(encoding="utf-8"))]
    assert found == []
