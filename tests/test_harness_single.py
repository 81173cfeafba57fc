"""The tests import one harness (issue 45, item 4): no file under ``tests/``
but ``tests/harness/`` defines a CLI runner or a poller of its own.

Read with :mod:`ast`:

- a CLI runner is a function that makes a click ``CliRunner``, runs the
  ``kraft`` CLI to its end in a subprocess (``subprocess.run``,
  ``check_output``, ``check_call``, ``call`` or ``trio.run_process`` on an
  argument list naming ``kraft``, ``kraft.cli`` or
  :func:`tests.harness.cli.kraft_args`), or returns such an argument list
  (a private ``kraft_args``). A ``Popen`` that starts a long-lived process
  (a node, a pty) is no runner: that is a cluster's or a process's job;
- a poller is a function named as one (``until``, ``wait_for``,
  ``eventually``, ``poll_*``) that does not hand its wait to
  :mod:`tests.harness.poll`, or a ``while`` loop whose body sleeps
  (``time.sleep``, ``trio.sleep``). A loop that acts on each turn (a load, a
  retried request that asserts each refusal, a sampler) is no wait: it is
  named in :data:`NOT_POLLS` with the reason.

Another rule joins by appending to :data:`RULES` (from its own test file
too): it takes a file's path (``tests/...``) and parsed module and yields
``(line, what)`` for each thing found; :func:`findings` runs every rule
over every file.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from pathlib import Path

TESTS = Path(__file__).resolve().parent
HARNESS = TESTS / "harness"

#: What a rule yields for each thing found: its line and what it is.
Finding = tuple[int, str]
Rule = Callable[[str, ast.Module], Iterator[Finding]]

_RUN_TO_END = {"run", "check_output", "check_call", "call"}
_POLLER_NAMES = {"until", "until_async", "wait_for", "wait_until", "eventually"}
_HARNESS_POLLS = {"until", "until_async", "settle"}
_SLEEPS = {"time.sleep", "trio.sleep", "sleep"}
_KRAFT_WORDS = {"kraft", "kraft.cli"}

#: ``path::function`` of the loops that sleep between turns yet wait for
#: nothing: each turn acts. The reason says how.
NOT_POLLS = {
    "tests/kafka/load.py::TopicLoad.create_for": "the load: creates a topic each turn, for a time",
    "tests/kafka/topic_history.py::main": "the load process: creates a topic each turn until told to stop",
    "tests/node/metadata_writer.py::write_while_leader": "the writer: one operation each turn, at its rate",
    "tests/node/test_controller_mode.py::test_a_log_of_other_records_stands_the_controller_down_in_one_line":
        "retries the append while the node is not yet leader",
    "tests/node/test_hostile_clients.py::test_hostile_clients_for_a_minute_leave_the_quorum_committing.sample":
        "samples memory and connections while the attack runs",
    "tests/node/test_kraft_version_upgrade.py::test_upgrade_a_static_quorum_then_add_a_controller":
        "retries UpdateFeatures and AddRaftVoter, asserting each refusal",
    "tests/node/test_reconfig_inprocess.py::add_until_ok": "retries AddRaftVoter, asserting each refusal",
    "tests/node/test_reconfig_processes.py::test_reassign_to_new_voters_while_nodes_and_the_tool_are_killed":
        "runs the tool again after each kill",
    "tests/programs/test_observer.py::test_a_late_observer_catches_up_from_a_snapshot":
        "appends each turn until retention moves the log start",
    "tests/programs/test_observer.py::test_the_observer_follows_a_dynamic_quorum_through_reconfiguration":
        "retries AddRaftVoter",
    "tests/programs/test_observer_faults.py::test_a_full_disk_stops_the_copy_the_image_is_still_served_and_it_recovers":
        "appends each turn until the observer's disk is full",
    "tests/programs/test_observer_processes.py::_add": "retries AddRaftVoter",
    "tests/programs/test_observer_processes.py::test_observer_follows_a_process_quorum_through_reconfiguration":
        "retries RemoveRaftVoter",
    "tests/test_readme_transcripts.py::test_console_transcript":
        "runs the README block again after a refusal it may retry",
}


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return node.id if isinstance(node, ast.Name) else ""


def _calls(nodes: list[ast.stmt] | ast.AST) -> Iterator[ast.Call]:
    for root in nodes if isinstance(nodes, list) else [nodes]:
        yield from (n for n in ast.walk(root) if isinstance(n, ast.Call))


def _is_kraft_list(node: ast.AST) -> bool:
    """``["kraft", ...]`` or ``[python, ..., "-m", "kraft.cli", ...]``."""
    if not isinstance(node, (ast.List, ast.Tuple)):
        return False
    words = [e.value if isinstance(e, ast.Constant) else None for e in node.elts]
    return words[:1] == ["kraft"] or any(a == "-m" and b in _KRAFT_WORDS for a, b in zip(words, words[1:]))


def _names_kraft(argument: ast.expr) -> bool:
    """An argument list that runs the ``kraft`` CLI."""
    return any(_is_kraft_list(node) or (isinstance(node, ast.Call)
                                        and _dotted(node.func).split(".")[-1] == "kraft_args")
               for node in ast.walk(argument))


def _functions(module: ast.Module) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Each function with its qualified name (``Class.method``, ``outer.inner``)."""
    def walk(node: ast.AST, prefix: str) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield prefix + child.name, child
                yield from walk(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                yield from walk(child, f"{prefix}{child.name}.")
            else:
                yield from walk(child, prefix)
    yield from walk(module, "")


def cli_runners(path: str, module: ast.Module) -> Iterator[Finding]:
    """Functions that make a ``CliRunner``, run ``kraft`` to its end in a
    subprocess, or build its argument list."""
    for _, function in _functions(module):
        for call in _calls(function):
            name = _dotted(call.func)
            if name.split(".")[-1] == "CliRunner":
                yield function.lineno, f"{function.name} makes a CliRunner (use tests.harness.cli.invoke)"
                break
            runs = name == "trio.run_process" or (name.startswith("subprocess.")
                                                  and name.split(".")[-1] in _RUN_TO_END)
            if runs and call.args and _names_kraft(call.args[0]):
                yield function.lineno, f"{function.name} runs kraft in a subprocess (use tests.harness.cli.run)"
                break
        else:
            if any(isinstance(n, ast.Return) and n.value is not None and _is_kraft_list(n.value)
                   for n in ast.walk(function)):
                yield function.lineno, f"{function.name} builds kraft's command line (use tests.harness.cli.kraft_args)"


def pollers(path: str, module: ast.Module) -> Iterator[Finding]:
    """Functions named as pollers that poll by themselves, and ``while``
    loops that sleep outside :data:`NOT_POLLS`."""
    for qualified, function in _functions(module):
        bare = function.name.lstrip("_")
        if bare in _POLLER_NAMES or bare.startswith("poll_"):
            if not any(_dotted(c.func) in _HARNESS_POLLS for c in _calls(function)):
                yield function.lineno, f"{function.name} is a poller (use tests.harness.poll)"
    seen: set[int] = set()
    for qualified, function in sorted(_functions(module), key=lambda f: -f[1].lineno):
        for loop in (n for n in ast.walk(function) if isinstance(n, ast.While) and n.lineno not in seen):
            seen.add(loop.lineno)  # a nested function's loops belong to it: innermost first
            if any(_dotted(call.func) in _SLEEPS for call in _calls(loop.body)) \
                    and f"{path}::{qualified}" not in NOT_POLLS:
                yield loop.lineno, f"a while loop in {qualified} sleeps: a poller (use tests.harness.poll)"
    for loop in (n for n in module.body if isinstance(n, ast.While)):
        if any(_dotted(call.func) in _SLEEPS for call in _calls(loop.body)):
            yield loop.lineno, "a while loop sleeps: a poller (use tests.harness.poll)"


#: The rules every test file keeps. The extension point: a rule for
#: another part of the harness (one Cluster class) is appended here.
RULES: list[Rule] = [cli_runners, pollers]


def checked_files() -> list[Path]:
    """Every Python file under tests/ but the harness itself."""
    return sorted(p for p in TESTS.rglob("*.py") if HARNESS not in p.parents and ".venv" not in p.parts)


def findings(rules: list[Rule] | None = None) -> list[str]:
    """``path:line what`` for each thing the rules find in the test files."""
    out = []
    for path in checked_files():
        name = path.relative_to(TESTS.parent).as_posix()
        module = ast.parse(path.read_text(encoding="utf-8"))
        for rule in rules if rules is not None else RULES:
            out += [f"{name}:{line} {what}" for line, what in rule(name, module)]
    return sorted(out)


def test_no_test_file_has_its_own_runner_or_poller() -> None:
    found = findings()
    assert not found, "test files with a harness of their own:\n" + "\n".join(found)


def test_every_loop_that_is_no_poll_is_still_there() -> None:
    # A NOT_POLLS entry whose loop moved or went would excuse the next loop of that name.
    present = set()
    for path in checked_files():
        name = path.relative_to(TESTS.parent).as_posix()
        for qualified, function in _functions(ast.parse(path.read_text(encoding="utf-8"))):
            if any(isinstance(n, ast.While) and any(_dotted(c.func) in _SLEEPS for c in _calls(n.body))
                   for n in ast.walk(function)):
                present.add(f"{name}::{qualified}")
    assert sorted(set(NOT_POLLS) - present) == []


def _found(source: str, path: str = "tests/x.py") -> list[str]:
    module = ast.parse(source)
    return [what for rule in RULES for _, what in rule(path, module)]


def test_the_rules_see_each_kind() -> None:
    # A rule that found nothing would pass the test above trivially.
    assert _found("def f():\n    return CliRunner().invoke(main, [])\n")
    assert _found("def f():\n    subprocess.run([sys.executable, '-m', 'kraft.cli', 'x'])\n")
    assert _found("def f():\n    subprocess.check_output(kraft_args('x'))\n")
    assert _found("async def f():\n    await trio.run_process(['kraft', 'x'])\n")
    assert _found("def _kraft(*a):\n    return [sys.executable, '-m', 'kraft.cli', *a]\n")
    assert _found("def _wait_for(): pass\n") and _found("async def poll_leader(): pass\n")
    assert _found("while True:\n    if x: break\n    time.sleep(1)\n")
    assert _found("async def f():\n    while x:\n        await trio.sleep(1)\n")
    # Starting a long-lived process, scripts that import kraft, waits through the harness, and
    # a loop NOT_POLLS names are no harness of their own.
    assert not _found("def f():\n    subprocess.Popen(kraft_args('node', 'start'))\n")
    assert not _found("def f():\n    subprocess.run([sys.executable, '-c', 'import kraft'])\n")
    assert not _found("def f():\n    until('leader', lambda: x, 30)\n")
    assert not _found("def wait_for(self, p):\n    return until(p, lambda: x, 30)\n")
    assert not _found("def main():\n    while x:\n        time.sleep(1)\n", "tests/kafka/topic_history.py")
