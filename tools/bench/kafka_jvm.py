"""Real Kafka for a bench: where ``java`` and Kafka's jars are, and one
server process (a Kafka JVM run by main class, or ``kraft node start``)
with its own folder, output file and readiness line.

The jars: ``$KRAFT_KAFKA_LIBS`` (a directory of Kafka's ``*.jar``), else
the complete download of the newest release kraft knows
(:data:`kraft.kafka_release.LATEST`) under ``$KRAFT_KAFKA_CACHE`` (default
``~/.cache/kraft/kafka``), where ``bash .ci/deps`` puts it. Without one
or without ``java``, :func:`locate_kafka` raises one line naming what is
missing and how to get it.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import click

from kraft.kafka_release import LATEST
from kraft.tools.kafka_brokers import JVM_OPTIONS, SERVER_LOG4J, KafkaJars, jars_version

__all__ = ["JVM_OPTIONS", "KafkaJars", "Server", "locate_kafka", "vm_rss_kib"]

LIBS_VAR = "KRAFT_KAFKA_LIBS"
CACHE_VAR = "KRAFT_KAFKA_CACHE"

def _cache_libs() -> Path:
    default = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kraft" / "kafka"
    return Path(os.environ.get(CACHE_VAR) or default) / LATEST.version / "lib"


def locate_kafka() -> KafkaJars:
    """``java`` and Kafka's jars, or a ClickException (exit 1) naming what is missing and the fix."""
    java = shutil.which("java")
    if java is None:
        raise click.ClickException("no `java` on PATH: the bench runs real Kafka; install a JDK 17+ "
                                   "(`bash .ci/deps` installs it and fetches Kafka's jars)")
    named = os.environ.get(LIBS_VAR)
    libs = Path(named) if named else _cache_libs()
    complete = named is not None or (libs.parent / "complete").exists()
    version = jars_version(libs)
    if not complete or version is None:
        where = f"${LIBS_VAR}={named}" if named else str(libs)
        raise click.ClickException(f"no Kafka jars in {where}: fetch Kafka {LATEST.version}'s with `bash .ci/deps`"
                                   + ("" if named else f" (or set {LIBS_VAR} to a Kafka libs/ directory)"))
    return KafkaJars(java, libs, version)


def vm_rss_kib(pid: int) -> int:
    """The process's resident set (``VmRSS`` of /proc/PID/status), KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise click.ClickException(f"process {pid} has no VmRSS in /proc/{pid}/status")


@dataclass
class Server:
    """One server process: ``ready`` is the regex its output or ``logs`` show once it serves."""

    name: str
    args: list[str]
    folder: Path
    ready: str
    logs: list[Path] = field(default_factory=list)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def out(self) -> Path:
        return self.folder / "stdout.log"

    @property
    def pid(self) -> int:
        assert self.proc is not None, f"{self.name} never started"
        return self.proc.pid

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.out, "ab") as out:
            # A session of its own: a Ctrl-C at the terminal reaches the bench alone, which stops it.
            self.proc = subprocess.Popen(self.args, stdout=out, stderr=subprocess.STDOUT, cwd=self.folder,
                                         stdin=subprocess.DEVNULL, start_new_session=True)

    def text(self) -> str:
        return "\n".join(p.read_text(errors="replace") for p in (self.out, *self.logs) if p.exists())

    def wait_ready(self, timeout_s: float) -> None:
        """Until ``ready`` shows; a ClickException naming the files if it exits or times out first."""
        deadline = time.monotonic() + timeout_s
        regex = re.compile(self.ready)
        while not regex.search(self.text()):
            if not self.alive:
                raise click.ClickException(f"{self.name} exited before it served (see {self.out})")
            if time.monotonic() > deadline:
                raise click.ClickException(f"{self.name} not serving within {timeout_s:.0f} s (see {self.out})")
            time.sleep(0.1)

    def kill(self) -> None:
        """kill -9, and reap it."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(30)
