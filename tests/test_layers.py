"""Import layering, checked on the source (what import-linter would enforce):

    kraft.tools  ->  kraft (node, raft core)  ->  kraft.wire / kraft.records  ->  kraft.messages

Lower layers never import higher ones; wire and records do not import each
other; the generator (kraft.messages.codegen) is never imported at run time;
the sans-IO raft core never imports trio or does I/O through sockets."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = {"kraft": REPO / "kraft", "kraft.wire": REPO / "wire", "kraft.messages": REPO / "messages",
            "kraft.records": REPO / "records", "kraft.tools": REPO / "tools"}
# The raft core: pure state transitions, no I/O, no clock, no trio.
SANS_IO = sorted(p.stem for p in (REPO / "kraft" / "raft").glob("*.py") if p.stem != "__init__")


def _modules() -> list[tuple[str, Path]]:
    out = []
    for pkg, root in PACKAGES.items():
        for path in root.rglob("*.py"):
            rel = path.relative_to(root).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            name = ".".join([pkg, *parts])
            if pkg == "kraft" and parts and parts[0] in ("wire", "messages", "records", "tools"):
                continue
            out.append((name, path))
    return out


def _imports(path: Path, module: str) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                # Relative import: resolve against the module's package.
                package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
                base = package[: len(package) - node.level + 1]
                prefix = ".".join(base)
                found.add(f"{prefix}.{node.module}" if node.module else prefix)
            elif node.module:
                found.add(node.module)
                found.update(f"{node.module}.{a.name}" for a in node.names)
    return found


def _layer(name: str) -> str:
    if name == "kraft.cli":
        return "kraft.tools"  # the entry point that registers the commands
    for pkg in ("kraft.messages", "kraft.wire", "kraft.records", "kraft.tools"):
        if name == pkg or name.startswith(pkg + "."):
            return pkg
    return "kraft"


FORBIDDEN = {
    "kraft.messages": ("kraft.wire", "kraft.records", "kraft.tools", "kraft"),
    "kraft.wire": ("kraft.records", "kraft.tools", "kraft"),
    "kraft.records": ("kraft.wire", "kraft.tools", "kraft"),
    "kraft": ("kraft.tools",),
    "kraft.tools": (),
}


@pytest.mark.parametrize("module,path", _modules(), ids=lambda x: str(x) if isinstance(x, str) else "")
def test_layering(module: str, path: Path) -> None:
    layer = _layer(module)
    for imported in _imports(path, module):
        if not imported.startswith("kraft"):
            continue
        target = _layer(imported)
        assert target not in FORBIDDEN[layer], f"{module} ({layer}) imports {imported} ({target})"
        if not module.startswith("kraft.messages.codegen") and imported.startswith("kraft.messages.codegen"):
            pytest.fail(f"{module} imports the generator {imported} at run time")


def test_raft_core_package_is_found() -> None:
    assert {"core", "quorum", "roles"} <= set(SANS_IO)


@pytest.mark.parametrize("name", SANS_IO)
def test_raft_core_is_sans_io(name: str) -> None:
    path = REPO / "kraft" / "raft" / f"{name}.py"
    imports = _imports(path, f"kraft.raft.{name}")
    bad = {i for i in imports if i.split(".")[0] in ("trio", "socket", "time", "asyncio", "threading", "os")}
    assert not bad, f"kraft.raft.{name} is part of the sans-IO core but imports {sorted(bad)}"
