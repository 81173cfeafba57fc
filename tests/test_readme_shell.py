"""The README's ``kraft shell`` transcript, run on a real Kafka 4.0
controller's directory (``fixtures/kafka-4.0-real/controller1``),
which stands in for the ``/var/lib/kafka/meta`` the README shows.

The interactive session in it (``>> CMD`` lines typed at a terminal) is run
as its non-interactive equivalent, ``kraft shell --snapshot FILE CMD`` per
command, its shown output checked as the README test checks any transcript;
``ls`` on a terminal prints columns, so its shown row becomes one name a
line, as ``ls`` prints off a terminal (Kafka's ``LsCommandHandler``). The
banner lines (``Loading...``) are printed only in interactive mode.
"""

from __future__ import annotations

import re
from pathlib import Path


from tests.test_readme import delegated_blocks, readme_block, run_example
from tests.conftest import FIXTURES

HERE = "tests/test_readme_shell.py"
FIXTURE = FIXTURES / "kafka-4.0-real" / "controller1"
README_DIR = "/var/lib/kafka/meta"
_BANNER = ("Loading...", "Starting...", "[ Kafka Metadata Shell ]")


def non_interactive(code: str) -> str:
    """The transcript with each interactive session replaced by one command
    line per ``>>`` command."""
    out: list[str] = []
    session: str | None = None
    last = ""
    for line in code.splitlines():
        if line.startswith("$ "):
            session = None
            if re.fullmatch(r"\$ kraft shell --snapshot \S+", line):
                session = line  # no command on its line: interactive
                continue
            out.append(line)
        elif session is not None:
            if line in _BANNER or line == ">> exit":
                continue
            if line.startswith(">> "):
                last = line[3:]
                out.append(f"{session} {last}")
            elif last.startswith("ls"):
                out.extend(re.split(r"\s{2,}", line.strip()))
            else:
                out.append(line)
        else:
            out.append(line)
    return "\n".join(out) + "\n"


def test_the_interactive_session_becomes_one_command_per_line() -> None:
    code = "$ kraft shell --snapshot F\nLoading...\n>> ls /\na  b\n>> cat /x\ny\n>> exit\n$ kraft shell --snapshot F ls /\n"
    assert non_interactive(code) == ("$ kraft shell --snapshot F ls /\na\nb\n$ kraft shell --snapshot F cat /x\ny\n"
                                     "$ kraft shell --snapshot F ls /\n")


def test_the_shell_transcript_runs_on_a_real_kafka_directory(tmp_path: Path) -> None:
    [line] = [at for at, test in delegated_blocks().items() if test == HERE]
    code = non_interactive(readme_block(line))
    assert code.count("$ kraft shell") == 7  # two from the session, five command lines
    out = run_example("console", code, tmp_path, adapt=lambda command: command.replace(README_DIR, str(FIXTURE)))
    assert "PartitionRegistration(replicas=[4]" in out
