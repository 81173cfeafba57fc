"""The type checker over the whole installed package: mypy with
pyproject's ``[tool.mypy]`` (untyped definitions disallowed, generated
codecs included), on a link tree of the installed layout
(:mod:`tests.static_checks`; by hand: ``.venv/bin/python -m tests.static_checks types``)."""

from __future__ import annotations

from pathlib import Path

from tests.static_checks import link_tree, real_path, run_mypy


def test_mypy_passes_on_the_whole_package(tmp_path: Path) -> None:
    tree = link_tree(tmp_path / "tree")
    result = run_mypy(tree)
    report = real_path(result.stdout + result.stderr, tree)
    assert result.returncode == 0, report[-6000:]
    assert "Success: no issues found" in report, report[-6000:]
    # Every part of the package was checked (the link tree is complete).
    checked = int(report.rsplit(" in ", 1)[1].split()[0])
    assert checked >= len(list(tree.rglob("*.py"))) - 1, report
