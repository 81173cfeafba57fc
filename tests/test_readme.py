"""Every example in README.md and in the documentation site's pages
(``docs/**/*.md``) runs as written.

Each ```python block runs as a program and each ```sh block under
``bash -euo pipefail``, in its own temporary directory, with ``kraft`` on
PATH meaning this checkout (``python -m kraft.cli``). A ```console block is
a transcript: each ``$ `` line runs the same way, and the lines shown after
it are its output, checked line by line in order (numbers, ids and ``...``
stand for whatever the run printed; see :func:`shown_line_pattern`).
Examples use 127.0.0.1 and relative or temporary paths only.

A block some other test runs (it needs a cluster, Spark, real Kafka's
files) says so on the line before its fence: ``<!-- run by tests/x.py -->``;
that test calls :func:`readme_block` and :func:`run_example` (checked
here). There is no other exemption: ```properties and the like are data,
a ```{toctree} is the site's structure, any other language is refused.

A block is named by where it is: ``docs/tools/quorum.md:17`` (the page,
then the line of its fence), which is also its test id.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = REPO / "docs"
RUNNABLE = ("python", "sh", "console")
#: Blocks that are data, not commands.
DATA = ("properties", "json", "text")
#: MyST directives the site's pages use: structure, not examples.
DIRECTIVES = ("{toctree}",)
_FENCE = re.compile(r"^```(\{[\w-]+\}|[\w-]*)[^\n]*\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)


def doc_pages() -> list[Path]:
    """README.md and every Markdown page of the site (not a build's output)."""
    pages = sorted(p for p in DOCS.rglob("*.md") if not {"_build", "_ext"} & set(p.relative_to(DOCS).parts))
    return [README, *pages]


def _page_texts() -> list[tuple[str, str]]:
    return [(str(page.relative_to(REPO)), page.read_text(encoding="utf-8")) for page in doc_pages()]


def readme_blocks() -> list[tuple[str, str, str]]:
    """(where: ``page:line``, language, code) of every fenced block of every page."""
    return [(f"{page}:{text.count(chr(10), 0, m.start()) + 1}", m.group(1), m.group(2))
            for page, text in _page_texts() for m in _FENCE.finditer(text)]


#: ``<!-- run by tests/x/test_y.py -->`` on the line before a fence: that
#: test runs the block as written (and checks what it made), this one does not
#: run it a second time.
_DELEGATED = re.compile(r"^<!-- run by (tests/\S+\.py) -->\n```", re.MULTILINE)


def delegated_blocks() -> dict[str, str]:
    """Where each delegated block's fence is (``page:line``) -> the test file that runs it."""
    return {f"{page}:{text.count(chr(10), 0, m.start()) + 2}": m.group(1)
            for page, text in _page_texts() for m in _DELEGATED.finditer(text)}


#: ``<!-- not run: WHY -->`` on the line before a fence: a block no test can
#: run as written (it needs real Kafka, hosts of its own, or is the suite
#: itself); each says why, one by one -- there is no exemption by language.
_NOT_RUN = re.compile(r"^<!-- not run: (.+?) -->\n```", re.MULTILINE)


def not_run_blocks() -> dict[str, str]:
    """Where each block that is not run is (``page:line``) -> why."""
    return {f"{page}:{text.count(chr(10), 0, m.start()) + 2}": m.group(1)
            for page, text in _page_texts() for m in _NOT_RUN.finditer(text)}


def readme_block(where: str) -> str:
    """The code of the block whose fence is at ``where`` (``page:line``)."""
    [code] = [code for at, _, code in readme_blocks() if at == where]
    return code


def _runnable() -> list[pytest.param]:  # type: ignore[valid-type]
    # Spark examples start a JVM (a standalone cluster, even): slow, still run in CI.
    delegated = delegated_blocks()
    # The id names Spark: the suite runs Spark's tests on one worker (tests/conftest.py).
    not_run = not_run_blocks()
    return [pytest.param(lang, code, id=f"{where}-{lang}" + ("-spark" if "spark" in code.lower() else ""),
                         marks=[pytest.mark.slow] if "spark" in code.lower() or "kraft bench" in code
                         or "static_checks" in code else [])
            for where, lang, code in readme_blocks()
            if lang in RUNNABLE and where not in delegated and where not in not_run]


def test_blocks_are_found_and_fences_balance() -> None:
    blocks = readme_blocks()
    for page, text in _page_texts():
        assert text.count("\n```") % 2 == 0, f"{page}: a code fence is not closed"
    assert any(lang == "python" for _, lang, _ in blocks) and any(lang == "sh" for _, lang, _ in blocks)
    assert {where.partition(":")[0] for where, _, _ in blocks} > {"README.md", "docs/tools/quorum.md"}
    for where, lang, _ in blocks:
        assert lang in RUNNABLE + DATA + DIRECTIVES, (
            f"{where}: a fence of language {lang!r}: give python, sh, console (run here or marked "
            f"<!-- run by tests/... -->), one of the data languages {DATA} or a directive {DIRECTIVES}")


def test_every_console_block_is_a_transcript() -> None:
    """A console block is run: it starts with a ``$ `` command line."""
    for where, lang, code in readme_blocks():
        if lang == "console":
            assert code.startswith("$ "), f"{where}: a console block starts with '$ ' (the command)"


def test_a_block_not_run_says_why() -> None:
    for where, why in not_run_blocks().items():
        assert len(why.split()) >= 4, f"{where}: say why no test runs it"


def test_delegated_blocks_are_run_by_the_test_they_name() -> None:
    for where, test_file in delegated_blocks().items():
        source = (REPO / test_file).read_text(encoding="utf-8")
        assert "readme_block(" in source and "run_example(" in source, (
            f"{where} says {test_file} runs it, but that file does not")


@pytest.mark.parametrize(("lang", "code"), _runnable())
def test_readme_example_runs(lang: str, code: str, tmp_path: Path) -> None:
    if "spark" in code.lower() and shutil.which("java") is None:
        pytest.skip("no java on PATH (Spark needs Java 17+)")  # as tests/spark/conftest.py's
    run_example(lang, code, tmp_path)


def transcript(code: str) -> list[tuple[str, list[str]]]:
    """A console block as (command, the output lines shown after it)."""
    steps: list[tuple[str, list[str]]] = []
    for line in code.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        elif steps and steps[-1][0].endswith("\\"):  # a command continued on the next line
            steps[-1] = (steps[-1][0][:-1] + line.strip(), [])
        else:
            assert steps, f"output before any command: {line!r}"
            steps[-1][1].append(line)
    return steps


_TOKENS = re.compile(r"(?P<any>\.\.\.)|(?P<id>(?<![\w-])[A-Za-z0-9_-]{22}(?![\w-]))|(?P<num>\d+(?:\.\d+)?)"
                     r"|(?P<space>\s+)|(?P<other>.)")
_FREE = {"any": ".*", "id": r"[A-Za-z0-9_-]{22}", "num": r"\d+(?:\.\d+)?", "space": r"\s+"}


def shown_line_pattern(shown: str) -> re.Pattern[str]:
    """The regex a shown output line stands for: itself, with its numbers
    (ports, offsets, timestamps, counts, durations), its 22-character ids
    and ``...`` free, and its whitespace any run of whitespace."""
    parts = [_FREE.get(m.lastgroup or "", "") or re.escape(m.group()) for m in _TOKENS.finditer(shown.strip())]
    return re.compile("".join(parts))


def check_shown(command: str, shown: list[str], stdout: str) -> None:
    """Each shown line matches a line of the output, in order."""
    actual = [line.strip() for line in stdout.splitlines()]
    at = 0
    for line in (s for s in shown if s.strip()):
        pattern = shown_line_pattern(line)
        while at < len(actual) and not pattern.fullmatch(actual[at]):
            at += 1
        assert at < len(actual), f"$ {command}\nshown: {line}\nnot in the output (in order):\n{stdout}"
        at += 1


def run_example(lang: str, code: str, tmp_path: Path, adapt: Callable[[str], str] | None = None) -> str:
    """Run one example (``kraft`` on PATH meaning this checkout) in a
    directory of its own under ``tmp_path``; its stdout, or a failure. A
    console transcript runs command by command, its shown output checked;
    ``adapt`` (a delegating test's) may rewrite each command first, e.g. to
    stop a ``--follow`` after a while."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "kraft"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m kraft.cli "$@"\n')
    shim.chmod(0o755)
    env = {**os.environ,
           "PATH": os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
           # `python -m tests.static_checks` and the like, from any directory.
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    work = tmp_path / "work"
    work.mkdir()
    if lang == "console":
        out = []
        for command, shown in transcript(code):
            run = adapt(command) if adapt is not None else command
            stdout = _run(["bash", "-euo", "pipefail", "-c", run], work, env, run)
            check_shown(command, shown, stdout)
            out.append(stdout)
        return "".join(out)
    if lang == "python":
        script = work / "example.py"
        script.write_text(code)
        command = [sys.executable, str(script)]
    else:
        command = ["bash", "-euo", "pipefail", "-c", code]
    return _run(command, work, env, code)


def _run(command: list[str], work: Path, env: dict[str, str], code: str) -> str:
    # Its own process group: whatever an example leaves running (a failed
    # example's background node) is killed with it.
    proc = subprocess.Popen(command, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        # Generous: an example may start a node and wait for it (2 loaded cores).
        stdout, stderr = proc.communicate(timeout=900)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
    assert proc.returncode == 0, f"exit {proc.returncode}\n--- code\n{code}\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
    return stdout


# A measured figure in the prose: a rate, a ratio, or a time something took.
_FIGURE = re.compile(
    r"\d[\d,]*(?:\.\d+)? ?(?:records|rows|rec)(?:/s| per (?:CPU )?second)"
    r"|\b\d+\.\d+ ?[x×](?![\w-])"
    r"|\b\d+ min \d+ s\b"
    r"|\btook \d+(?:\.\d+)? s\b"
)
#: The commands that print the figures the README and the site quote.
_MEASURING = re.compile(r"`(?:kraft bench [a-z-]+|kraft spark (?:export|report)|\.venv/bin/pytest|pytest)\b[^`]*`")


def prose_paragraphs() -> list[tuple[str, str]]:
    """The paragraphs and table rows outside code blocks of every page, with
    where each starts (``page:line``)."""
    return [(f"{page}:{line}", para) for page, text in _page_texts() for line, para in _paragraphs(text)]


def _paragraphs(text: str) -> list[tuple[int, str]]:
    text = _FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    out: list[tuple[int, str]] = []
    start, lines = 0, []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip() and not line.startswith("|"):
            if not lines:
                start = number
            lines.append(line)
            continue
        if lines:
            out.append((start, " ".join(lines)))
            lines = []
        if line.startswith("|"):
            out.append((number, line))
    if lines:
        out.append((start, " ".join(lines)))
    return out


def test_every_performance_figure_names_the_command_that_printed_it() -> None:
    """Issue 28: a rate, ratio or time in the README or a page of the site
    sits in a paragraph (or table row) naming the benchmark command that
    prints it, e.g. `kraft bench shell`, so a reader can re-measure it; the
    shell's old 1.24x is gone."""
    unlabelled = [(where, _FIGURE.findall(para)) for where, para in prose_paragraphs()
                  if _FIGURE.search(para) and not _MEASURING.search(para)]
    assert not unlabelled, f"figures without the command that printed them (page:line, figures): {unlabelled}"
    assert all("1.24x" not in text for _, text in _page_texts())


def test_the_figure_check_sees_figures() -> None:
    figures = [f for where, para in prose_paragraphs() if where.startswith("docs/") for f in _FIGURE.findall(para)]
    assert any("records/s" in f for f in figures) and any(f.endswith("x") for f in figures)
    [(_, para)] = _paragraphs("One run: 52,524 records/s on 2 cores.\n")
    assert _FIGURE.search(para) and not _MEASURING.search(para)  # a figure naming no bench is caught
    assert _FIGURE.search("took 15.0 s") and not _FIGURE.search("every 500 ms, for at most 1.5 s")


def _block_under(heading: str, lang: str) -> str:
    """The first ``lang`` block of the section ``heading`` (of any level, on
    any page): up to the next heading of the same level or above."""
    for _, text in _page_texts():
        m = re.search(rf"^(#+) {re.escape(heading)}\n", text, re.MULTILINE)
        if m is None:
            continue
        end = re.compile(rf"^#{{1,{len(m.group(1))}}} ", re.MULTILINE).search(text, m.end())
        block = _FENCE.search(text, m.end(), end.start() if end else len(text))
        assert block is not None and block.group(1) == lang, heading
        return block.group(2)
    raise AssertionError(f"no page has the heading {heading!r}")


def test_the_codecs_example_prints_kafkas_json(tmp_path: Path) -> None:
    """issue 33: it printed a Python dict (single quotes, True), not the
    JSON of Kafka's JsonConverter."""
    import json

    printed = json.loads(run_example("python", _block_under("Codecs", "python"), tmp_path))
    assert printed["clusterId"] == "MkU3OEVBNTcwNTJENDM2Qg"


def test_the_simulation_example_shows_what_its_seed_gives() -> None:
    """The simulation is seeded: its result line is the one the README shows,
    exactly (the transcript check lets numbers vary; issue 33 found it stale)."""
    code = _block_under("The raft core and its simulation", "console")
    [(command, shown)] = transcript(code)
    argv = command.split()
    assert argv[:3] == ["python", "-m", "kraft.sim"]
    done = subprocess.run([sys.executable, *argv[1:]], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == shown[0]
