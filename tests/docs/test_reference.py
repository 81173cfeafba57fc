"""The generated reference stays complete, and the README stays short.

Every ``kraft`` command and option carries its help text: the command
reference (``docs/reference/cli.rst``, sphinx-click) is generated from it,
so a command added without help would be a blank entry. The README is the
front page, at most 150 lines, saying what kraft is in its first three;
every relative link of it and of the site's pages leads to a file that
exists.
"""

from __future__ import annotations

import re
from pathlib import Path

import click

from kraft.cli import main
from tests.test_readme import README, REPO, doc_pages

MAX_README_LINES = 150


def undocumented(group: click.Group, prefix: str = "kraft") -> list[str]:
    """Every command (loaded lazily or not) and option under ``group``
    without help text, as ``kraft dump-log --files``."""
    missing = []
    ctx = click.Context(group, info_name=prefix)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        path = f"{prefix} {name}"
        if not (command.help or command.short_help):
            missing.append(path)
        missing.extend(f"{path} {param.opts[-1]}" for param in command.params
                       if isinstance(param, click.Option) and not param.hidden and not param.help)
        if isinstance(command, click.Group):
            missing.extend(undocumented(command, path))
    return missing


def test_every_command_and_option_has_help() -> None:
    assert undocumented(main) == []


def test_a_command_without_help_is_found() -> None:
    @click.group()
    def tool() -> None:
        """A tool."""

    @tool.command("bare")
    @click.option("--size", type=int)
    def bare(size: int) -> None:
        pass

    @tool.command("described", help="Described.")
    @click.option("--size", type=int, help="How big.")
    def described(size: int) -> None:
        pass

    assert undocumented(tool, "tool") == ["tool bare", "tool bare --size"]


def readme_problems(text: str) -> list[str]:
    """What keeps ``text`` from being the README's front page."""
    problems = []
    lines = text.splitlines()
    if len(lines) > MAX_README_LINES:
        problems.append(f"README.md has {len(lines)} lines, more than {MAX_README_LINES}: move the detail into docs/")
    opening = " ".join(lines[:3])
    if not all(word in opening for word in ("kraft", "Kafka", "KRaft")):
        problems.append("README.md's first three lines do not say what kraft is (a KRaft node for Kafka)")
    return problems


def test_the_readme_is_short_and_starts_with_what_kraft_is() -> None:
    assert readme_problems(README.read_text(encoding="utf-8")) == []


def test_a_long_readme_or_one_without_an_opening_fails() -> None:
    opening = "# kraft\n\n`kraft` is a KRaft node for Apache Kafka.\n"
    assert readme_problems(opening + "text\n" * 147) == []
    assert readme_problems(opening + "text\n" * 148) == [
        "README.md has 151 lines, more than 150: move the detail into docs/"]
    assert readme_problems("# kraft\n\nSetup first.\n") == [
        "README.md's first three lines do not say what kraft is (a KRaft node for Kafka)"]


_LINK = re.compile(r"\]\(([^)\s]+)\)")


def broken_relative_links(page: Path, root: Path = REPO) -> list[str]:
    """The relative links of a Markdown page whose file does not exist."""
    broken = []
    for target in _LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue  # a URL, or an anchor on the page itself (the site build checks those)
        if not (page.parent / target.split("#", 1)[0]).exists():
            broken.append(f"{page.relative_to(root)}: {target}")
    return broken


def test_every_relative_link_leads_to_a_file() -> None:
    assert [broken for page in doc_pages() for broken in broken_relative_links(page)] == []
    assert "docs/beside-kafka/witness.md" in README.read_text()  # the front page links into the site


def test_a_link_to_a_missing_page_is_found(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "getting-started.md").write_text("# Getting started\n")
    page = tmp_path / "docs" / "index.md"
    page.write_text("[here](getting-started.md#install), [gone](gone.md), [web](https://kafka.apache.org/)\n")
    assert broken_relative_links(page, tmp_path) == ["docs/index.md: gone.md"]


def table_codes(text: str) -> set[int]:
    """The exit codes in the first column of a page's exit-code table."""
    return {int(m.group(1)) for m in re.finditer(r"^\| (\d+) \|", text, re.MULTILINE)}


def test_the_exit_code_page_lists_exactly_the_defined_codes() -> None:
    """docs/operating/exit-codes.md explains each class with examples; the
    codes themselves are kraft/errors.py's (the generated reference renders
    them), so the page's table has each code once, and no other."""
    from kraft import errors

    defined = {0} | {getattr(errors, name) for name in errors.__all__ if name.startswith("EXIT_")}
    page = (REPO / "docs" / "operating" / "exit-codes.md").read_text()
    assert table_codes(page) == defined
    assert table_codes("| 0 | success | |\n| 7 | made up | |\n") == {0, 7}
