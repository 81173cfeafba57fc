"""Every example in README.md runs as written.

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
any other language is refused.
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
RUNNABLE = ("python", "sh", "console")
#: Blocks that are data, not commands.
DATA = ("properties", "json", "text")
_FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)


def readme_blocks() -> list[tuple[int, str, str]]:
    """(line number, language, code) of every fenced block."""
    text = README.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start()) + 1, m.group(1), m.group(2)) for m in _FENCE.finditer(text)]


#: ``<!-- run by tests/x/test_y.py -->`` on the line before a fence: that
#: test runs the block as written (and checks what it made), this one does not
#: run it a second time.
_DELEGATED = re.compile(r"^<!-- run by (tests/\S+\.py) -->\n```", re.MULTILINE)


def delegated_blocks() -> dict[int, str]:
    """Line number of each delegated block's fence -> the test file that runs it."""
    text = README.read_text(encoding="utf-8")
    return {text.count("\n", 0, m.start()) + 2: m.group(1) for m in _DELEGATED.finditer(text)}


#: ``<!-- not run: WHY -->`` on the line before a fence: a block no test can
#: run as written (it needs real Kafka, hosts of its own, or is the suite
#: itself); each says why, one by one -- there is no exemption by language.
_NOT_RUN = re.compile(r"^<!-- not run: (.+?) -->\n```", re.MULTILINE)


def not_run_blocks() -> dict[int, str]:
    """Line number of each block's fence that is not run -> why."""
    text = README.read_text(encoding="utf-8")
    return {text.count("\n", 0, m.start()) + 2: m.group(1) for m in _NOT_RUN.finditer(text)}


def readme_block(line: int) -> str:
    """The code of the block whose fence is on ``line``."""
    [code] = [code for at, _, code in readme_blocks() if at == line]
    return code


def _runnable() -> list[pytest.param]:  # type: ignore[valid-type]
    # Spark examples start a JVM (a standalone cluster, even): slow, still run in CI.
    delegated = delegated_blocks()
    # The id names Spark: the suite runs Spark's tests on one worker (tests/conftest.py).
    return [pytest.param(lang, code, id=f"README.md:{line}-{lang}" + ("-spark" if "spark" in code.lower() else ""),
                         marks=[pytest.mark.slow] if "spark" in code.lower() or "kraft bench" in code
                         or "static_checks" in code else [])
            for line, lang, code in readme_blocks()
            if lang in RUNNABLE and line not in delegated and line not in not_run_blocks()]


def test_blocks_are_found_and_fences_balance() -> None:
    blocks = readme_blocks()
    assert README.read_text(encoding="utf-8").count("\n```") % 2 == 0
    assert any(lang == "python" for _, lang, _ in blocks) and any(lang == "sh" for _, lang, _ in blocks)
    for line, lang, _ in blocks:
        assert lang in RUNNABLE + DATA, (
            f"README.md:{line}: a fence of language {lang!r}: give python, sh, console (run here or marked "
            f"<!-- run by tests/... -->) or one of the data languages {DATA}")


def test_every_console_block_is_a_transcript() -> None:
    """A console block is run: it starts with a ``$ `` command line."""
    for line, lang, code in readme_blocks():
        if lang == "console":
            assert code.startswith("$ "), f"README.md:{line}: a console block starts with '$ ' (the command)"


def test_a_block_not_run_says_why() -> None:
    for line, why in not_run_blocks().items():
        assert len(why.split()) >= 4, f"README.md:{line}: say why no test runs it"


def test_delegated_blocks_are_run_by_the_test_they_name() -> None:
    for line, test_file in delegated_blocks().items():
        source = (REPO / test_file).read_text(encoding="utf-8")
        assert "readme_block(" in source and "run_example(" in source, (
            f"README.md:{line} says {test_file} runs it, but that file does not")


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
#: The commands that print the figures the README quotes.
_MEASURING = re.compile(r"`(?:kraft bench [a-z-]+|kraft spark (?:export|report)|\.venv/bin/pytest|pytest)\b[^`]*`")


def prose_paragraphs() -> list[tuple[int, str]]:
    """The README's paragraphs and table rows outside code blocks, with their first line."""
    text = _FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), README.read_text(encoding="utf-8"))
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
    """Issue 28: a rate, ratio or time in the README sits in a paragraph (or
    table row) naming the benchmark command that prints it, e.g. `kraft bench
    shell`, so a reader can re-measure it; the shell's old 1.24x is gone."""
    unlabelled = [(line, _FIGURE.findall(para)) for line, para in prose_paragraphs()
                  if _FIGURE.search(para) and not _MEASURING.search(para)]
    assert not unlabelled, f"figures without the command that printed them (README line, figures): {unlabelled}"
    assert "1.24x" not in README.read_text(encoding="utf-8")


def test_the_figure_check_sees_figures() -> None:
    figures = [f for _, para in prose_paragraphs() for f in _FIGURE.findall(para)]
    assert any("records/s" in f for f in figures) and any(f.endswith("x") for f in figures)
    assert _FIGURE.search("took 15.0 s") and not _FIGURE.search("every 500 ms, for at most 1.5 s")


def _block_under(heading: str, lang: str) -> str:
    """The first ``lang`` block of the README section ``heading``."""
    text = README.read_text(encoding="utf-8")
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    m = _FENCE.search(text, start, end if end >= 0 else len(text))
    assert m is not None and m.group(1) == lang, heading
    return m.group(2)


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
