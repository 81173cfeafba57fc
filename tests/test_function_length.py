"""No function outside generated code is over 100 lines, and few are over 80
(issue 34, item 4: long functions had doubled, to 23 over 80 and one of 225).

A function's length is the line span of its ``def``, decorators and
docstring included (a click command counts its options). The generated
codecs (``messages/generated/``) are straight-line code by design and are
not counted. A function nested in another counts on its own, and inside
its parent too.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The installed sources (pyproject's package-dir).
SOURCES = ("kraft", "wire", "records", "messages", "tools")
#: No function may be longer.
LIMIT = 100
#: Long, but allowed in small number.
LONG = 80
#: How many may be over :data:`LONG` (issue 34 asked for at least halving
#: the 23 there were; lower this as functions are split, never raise it).
MAX_LONG = 11


def function_lengths() -> list[tuple[int, str]]:
    """Each function's length and place (``path:line name``), longest first."""
    out = []
    for base in SOURCES:
        for path in (ROOT / base).rglob("*.py"):
            if "generated" in path.parts or ".venv" in path.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                    assert node.end_lineno is not None
                    out.append((node.end_lineno - first + 1,
                                f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"))
    return sorted(out, reverse=True)


def test_no_function_is_over_the_limit() -> None:
    over = [f"{n} {where}" for n, where in function_lengths() if n > LIMIT]
    assert not over, f"functions over {LIMIT} lines (split them along their seams): {over}"


def test_few_functions_are_long() -> None:
    long = [f"{n} {where}" for n, where in function_lengths() if n > LONG]
    assert len(long) <= MAX_LONG, f"{len(long)} functions over {LONG} lines, at most {MAX_LONG} allowed: {long}"


def test_the_measure_counts_decorators_and_sees_every_folder() -> None:
    # A scan that skipped the folders mapped by package-dir, or measured
    # from the def line, would pass the tests above trivially.
    source = "@a\n@b(\n  1)\ndef f():\n    '''doc'''\n    return 1\n"
    node = ast.parse(source).body[0]
    assert isinstance(node, ast.FunctionDef) and node.decorator_list[0].lineno == 1 and node.end_lineno == 6
    places = {where.split(":")[0].split("/")[0] for _, where in function_lengths()}
    assert places == set(SOURCES)
