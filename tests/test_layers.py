"""Import layering, as import-linter contracts (pyproject.toml, ``[tool.importlinter]``):

    kraft.tools  ->  kraft.sim  ->  kraft.node  ->  kraft.config | kraft.admin_client  ->  kraft.raft | kraft.image
                 ->  kraft.wire | kraft.records  ->  kraft.messages

Lower layers never import higher ones; wire and records do not import each
other, nor raft and image, nor config and the admin client; the generator (kraft.messages.codegen) is never
imported at run time; no import cycles anywhere (TYPE_CHECKING imports
included). The contracts run on a link tree of the installed layout
(:mod:`tests.static_checks`). The sans-IO raft core never imports trio or
does I/O through sockets, a clock or threads (checked here on the source);
neither it nor the controller imports trio, socket, ssl or kraft.wire's
transport, directly or through another module (a contract, and a fresh
interpreter's modules after importing them).
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.static_checks import link_tree, package_dirs, real_path, run_import_linter

REPO = Path(__file__).resolve().parents[1]
# The raft core: pure state transitions, no I/O, no clock, no trio; its
# subpackages (the handler families, the RPCs) included.
SANS_IO = sorted(".".join(p.relative_to(REPO / "kraft" / "raft").with_suffix("").parts)
                 for p in (REPO / "kraft" / "raft").rglob("*.py") if p.stem != "__init__")


def _contracts() -> list[dict[str, object]]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    contracts: list[dict[str, object]] = config["tool"]["importlinter"]["contracts"]
    return contracts


def _modules() -> list[str]:
    """Every module of the installed package, by its import name."""
    names = []
    for package, folder in package_dirs().items():
        for path in folder.rglob("*.py"):
            parts = [p for p in path.relative_to(folder).with_suffix("").parts if p != "__init__"]
            names.append(".".join([package, *parts]))
    return sorted(names)


def test_import_contracts_are_kept(tmp_path: Path) -> None:
    tree = link_tree(tmp_path / "tree")
    result = run_import_linter(tree)
    report = real_path(result.stdout + result.stderr, tree)
    assert result.returncode == 0, report
    assert "8 kept, 0 broken" in report, report


def test_the_chaos_reader_contract_catches_an_import_of_kraft(tmp_path: Path) -> None:
    """tools/bench/chaos/segments.py said a contract kept it free of kraft;
    none did (issue 44). One import of kraft's batch reader breaks it now."""
    tree = link_tree(tmp_path / "tree")
    segments = tree / "kraft" / "tools" / "bench" / "chaos" / "segments.py"
    text = segments.read_text(encoding="utf-8")
    segments.unlink()  # a link into the worktree: write a copy instead
    segments.write_text(text + "\nimport kraft.records.batch  # planted\n", encoding="utf-8")
    result = run_import_linter(tree)
    report = result.stdout + result.stderr
    broken = [line for line in report.splitlines() if line.endswith(" BROKEN")]
    assert result.returncode != 0 and len(broken) == 1, report
    assert broken[0].startswith("The chaos checker's file reader imports nothing of kraft"), report


@pytest.mark.parametrize("module", ["node_run.py", "demo_writer.py", "node_command.py"])
def test_the_node_run_contract_catches_an_import_of_the_bench(tmp_path: Path, module: str) -> None:
    """Issue 45: `kraft node start` carried the bench's load (a lazy import
    of kraft.tools.bench.load in the node's run path). One import of the
    bench planted there breaks that contract, and with it the one against
    cycles only (the bench's voters import the node's run path)."""
    tree = link_tree(tmp_path / "tree")
    path = tree / "kraft" / "tools" / module
    text = path.read_text(encoding="utf-8")
    path.unlink()  # a link into the worktree: write a copy instead
    path.write_text(text + "\n\ndef _planted() -> None:\n    import kraft.tools.bench.records  # noqa\n",
                    encoding="utf-8")
    result = run_import_linter(tree)
    report = result.stdout + result.stderr
    broken = [line for line in report.splitlines() if line.endswith(" BROKEN")]
    assert result.returncode != 0 and len(broken) == 2, report
    assert broken[0].startswith("The node's run path imports nothing of the bench"), report
    assert broken[1].startswith("No import cycles anywhere under kraft"), report


#: What the chaos client may import of kraft: the codecs, and the wire's framing and codec with what they import.
CHAOS_CLIENT_MAY_IMPORT = ("kraft.messages", "kraft.wire.codec", "kraft.wire.framing", "kraft.wire.apis",
                           "kraft.wire.errors", "kraft.wire.headers")
CHAOS_CLIENT = "kraft.tools.bench.chaos_client"


@pytest.mark.parametrize("bad_import", ["import kraft.wire.network_client", "import kraft.tools.bench.node_process",
                                        "import kraft.node.node"])
def test_the_chaos_client_contract_catches_an_import_of_the_node(tmp_path: Path, bad_import: str) -> None:
    """Issue 44: the chaos client shares no code with the node beyond the
    protocol. One import of the wire's client, of the bench's node process or of the
    node breaks that contract (and that one alone)."""
    tree = link_tree(tmp_path / "tree")
    client = tree / "kraft" / "tools" / "bench" / "chaos_client.py"
    text = client.read_text(encoding="utf-8")
    client.unlink()  # a link into the worktree: write a copy instead
    client.write_text(text + f"\n{bad_import}  # planted\n", encoding="utf-8")
    result = run_import_linter(tree)
    report = result.stdout + result.stderr
    broken = [line for line in report.splitlines() if line.endswith(" BROKEN")]
    assert result.returncode != 0 and len(broken) == 1, report
    assert broken[0].startswith("The chaos client imports only the codecs"), report


def test_chaos_client_contract_names_every_other_module() -> None:
    """The chaos client's contract lists what it must not import by hand:
    every module but the codecs, the wire modules it may use, its own
    parent packages and itself must be covered by one of them."""
    contract = next(c for c in _contracts() if c.get("id") == "chaos-client-independent")
    forbidden = contract["forbidden_modules"]
    assert isinstance(forbidden, list)
    parents = {"kraft", "kraft.wire", "kraft.tools", "kraft.tools.bench", CHAOS_CLIENT}
    uncovered = [m for m in _modules() if m.startswith("kraft.") and m not in parents
                 and not any(m == a or m.startswith(a + ".") for a in CHAOS_CLIENT_MAY_IMPORT)
                 and not any(m == f or m.startswith(f + ".") for f in forbidden)]
    assert not uncovered, f"add to forbidden_modules of chaos-client-independent in pyproject.toml: {uncovered}"


def test_the_chaos_client_process_loads_nothing_of_the_node() -> None:
    """At run time too: ``python -m kraft.tools.bench.chaos_client`` loads
    its parent packages (whose ``__init__`` imports nothing), the codecs and
    the wire's framing and codec, and no other module of kraft."""
    import subprocess
    import sys

    code = (f"import sys, {CHAOS_CLIENT}; "
            "print('\\n'.join(m for m in sys.modules if m == 'kraft' or m.startswith('kraft.')))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    parents = {"kraft", "kraft.wire", "kraft.tools", "kraft.tools.bench", CHAOS_CLIENT}
    other = [m for m in loaded if m not in parents
             and not any(m == a or m.startswith(a + ".") for a in CHAOS_CLIENT_MAY_IMPORT)]
    assert "kraft.messages.generated.alter_client_quotas_request" in loaded, loaded
    assert not other, other


@pytest.mark.parametrize("package,bad_import,contract", [
    ("messages", "import kraft.cli", "Layers import downwards"),  # the bottom layer reaching the top
    ("raft", "import kraft.messages.codegen", "The generator"),
    ("raft", "from kraft.raft import _probe_b", "No import cycles"),  # _probe_b imports _probe_a
    ("sim", "import kraft.node.raft_driver", "Only the embedding API"),  # allowed by the layers, not by this
    ("raft", "import trio", "Sans-IO raft and controller"),
    ("controller", "import socket", "Sans-IO raft and controller"),  # the standard library
    ("raft", "import kraft.wire.network_client", "Sans-IO raft and controller"),
], ids=["layers", "generator", "cycle", "node-object", "sans-io-trio", "sans-io-socket", "sans-io-wire-client"])
def test_import_contracts_catch_a_violation(tmp_path: Path, package: str, bad_import: str, contract: str) -> None:
    """The contracts are live: one bad import planted in the tree breaks the one it should."""
    tree = link_tree(tmp_path / "tree")
    (tree / "kraft" / package / "_probe_a.py").write_text(bad_import + "\n", encoding="utf-8")
    (tree / "kraft" / package / "_probe_b.py").write_text(f"from kraft.{package} import _probe_a\n",
                                                          encoding="utf-8")
    result = run_import_linter(tree)
    report = result.stdout + result.stderr
    assert result.returncode != 0, report
    broken = [line for line in report.splitlines() if line.endswith(" BROKEN")]
    assert len(broken) == 1 and broken[0].startswith(contract), report


def test_generator_contract_names_every_run_time_module() -> None:
    """The "no generator at run time" contract lists its sources by hand:
    every module but the generator must be covered by one of them."""
    contract = next(c for c in _contracts() if c.get("id") == "no-generator-at-run-time")
    sources = contract["source_modules"]
    assert isinstance(sources, list)
    uncovered = [m for m in _modules()
                 if m.startswith("kraft.") and not m.startswith("kraft.messages.codegen") and m != "kraft.messages"
                 and not any(m == s or m.startswith(s + ".") for s in sources)]
    assert not uncovered, f"add to source_modules of the generator contract in pyproject.toml: {uncovered}"


def test_layers_contract_names_every_package() -> None:
    """Each top-level part of ``kraft`` is in a layer (a new package must choose one)."""
    contract = next(c for c in _contracts() if c.get("id") == "layers")
    layers = contract["layers"]
    assert isinstance(layers, list)
    named = {m.strip() for layer in layers for m in str(layer).replace(":", "|").split("|")}
    parts = {".".join(m.split(".")[:2]) for m in _modules() if m.startswith("kraft.")}
    assert parts <= named, f"not in any layer of pyproject's layers contract: {sorted(parts - named)}"


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return found


def test_raft_core_package_is_found() -> None:
    assert {"core", "quorum_state", "roles", "rpcs.api_versions_rpc", "families.common"} <= set(SANS_IO)


@pytest.mark.parametrize("name", SANS_IO)
def test_raft_core_is_sans_io(name: str) -> None:
    imports = _imports((REPO / "kraft" / "raft" / name.replace(".", "/")).with_suffix(".py"))
    bad = {i for i in imports if i.split(".")[0] in ("trio", "socket", "time", "asyncio", "threading", "os")}
    assert not bad, f"kraft.raft.{name} is part of the sans-IO core but imports {sorted(bad)}"


#: Loaded by an import of the sans-IO modules, they would mean I/O reached them.
IO_MODULES = ("trio", "ssl", "kraft.wire.network_client", "kraft.wire.server", "kraft.wire.tls", "kraft.wire.sasl",
              "kraft.wire.scram", "kraft.wire.security", "kraft.wire.tcp_connect")


def test_sans_io_modules_load_no_io_module() -> None:
    """What a fresh interpreter holds after importing the raft core (which
    imports every RPC) and the controller's state machine (issue 45: the
    ApiVersions RPC reached trio through kraft.wire.network_client). ``socket`` is
    not checked: the standard library's importlib.metadata loads it (through
    email.utils), and crc32c, the batch checksum, imports that at import
    time; the import contract still keeps kraft's own code from importing it."""
    code = ("import sys, kraft.raft.core, kraft.controller.quorum_controller; "
            f"print(' '.join(m for m in {IO_MODULES!r} if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert result.stdout.split() == [], f"the sans-IO modules load {result.stdout.split()}"


def test_link_tree_mirrors_the_installed_package(tmp_path: Path) -> None:
    tree = link_tree(tmp_path / "tree")
    codec = tree / "kraft" / "wire" / "codec.py"
    assert codec.is_symlink() and Path(os.readlink(codec)).resolve() == (REPO / "wire" / "codec.py").resolve()
    assert real_path(f"{codec}:1: error", tree) == "wire/codec.py:1: error"


def test_node_object_contract_names_every_node_module() -> None:
    """The "only the wiring imports the node object" contract lists kraft.node's
    modules by hand: a new one must be listed (or, embedding the node, be
    named here on purpose)."""
    contract = next(c for c in _contracts() if c.get("id") == "node-object-private")
    allowed = {"kraft.node", "kraft.node.node", "kraft.node.raft_manager", "kraft.node.raft_driver"}
    node_modules = {m for m in _modules() if m == "kraft.node" or m.startswith("kraft.node.")}
    assert node_modules - allowed - set(contract["source_modules"]) == set()
