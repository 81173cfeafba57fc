"""Real processes for the real-Kafka tests: Kafka's JVMs (servers and tools,
run by main class) and ``kraft node start``, each with its own output file,
started in a session of its own and always reaped.

Every process a test starts is registered in :data:`LIVE`; the ``kafka``
fixtures (tests/kafka/conftest.py) kill what is left after each test and fail
the test if a process outlived it.
"""

from __future__ import annotations

import functools
import os
import re
import signal
import subprocess
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from kraft.tools import kafka_brokers
from tests.harness.cli import kraft_args  # cluster.py takes it from here
from tests.harness.poll import until
from tests.kafka.releases import KafkaRelease

#: Small, quick JVMs: two cores run the whole suite beside these. C1 alone and
#: the serial collector halve a JVM's start-up CPU; 256 MiB holds a test
#: controller or broker (a handful of topics) with room to spare.
JVM_OPTIONS = ("-Xmx256m", "-Xms32m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:CICompilerCount=1",
               "-Xss512k", "-Djava.awt.headless=true")

#: A server's log4j2 configuration, the product's (everything at INFO to
#: ``server.log`` in its folder), so a test reads the transitions Kafka logs
#: and a failure shows why.
SERVER_LOG4J = kafka_brokers.SERVER_LOG4J

#: A tool's: warnings and errors to stderr, as Kafka's tools-log4j2.yaml does.
TOOL_LOG4J = """\
status = warn
appender.err.type = Console
appender.err.name = err
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.err.ref = err
"""


class StartError(Exception):
    """A process that died while starting, or never got ready: one line
    naming the process and the cause."""


#: A JVM's exception line: ``org.apache.kafka.common.KafkaException: message``.
_EXCEPTION = re.compile(r"^(Caused by: )?[\w.$]+(Exception|Error): ")

#: Every process started and not yet reaped (the fixtures' leak check).
LIVE: list[Process] = []


def reap_leaked(before: list[Process]) -> list[str]:
    """Kill every process started since ``before`` was taken (a copy of
    :data:`LIVE`); the names of those still running -- each a failure of the
    test that started it."""
    leaked = [p for p in LIVE if p not in before]
    running = [p.name for p in leaked if p.alive]
    for process in leaked:
        process.kill()
    return running


@dataclass
class Process:
    """One real process; ``name`` says what it is in every message
    (``Kafka controller 1 (4.4.0)``)."""

    name: str
    args: list[str]
    folder: Path
    env: dict[str, str] | None = None
    proc: subprocess.Popen[bytes] | None = None
    paused: bool = False
    starts: int = 0
    #: Files whose text ``wait_for`` searches, besides the output.
    logs: list[Path] = field(default_factory=list)

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
        assert not self.alive, f"{self.name} is already running"
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.out, "ab") as out:
            # A session of its own: signals a test sends reach this process
            # alone, and a Ctrl-C at the terminal does not.
            self.proc = subprocess.Popen(self.args, stdout=out, stderr=subprocess.STDOUT, env=self.env,
                                         cwd=self.folder, start_new_session=True)
        self.starts += 1
        self.paused = False
        LIVE.append(self)

    def text(self) -> str:
        """The output and the log files so far."""
        parts = [p.read_text(errors="replace") for p in (self.out, *self.logs) if p.exists()]
        return "\n".join(parts)

    def wait_for(self, pattern: str, timeout_s: float, count: int = 1) -> re.Match[str]:
        """Block until ``pattern`` (a regex) has appeared ``count`` times in
        the output or logs; a :class:`StartError` if the process exits or the
        time runs out first."""
        regex = re.compile(pattern)

        def logged() -> re.Match[str] | None:
            matches = list(regex.finditer(self.text()))
            if len(matches) >= count:
                return matches[count - 1]
            if not self.alive:
                code = None if self.proc is None else self.proc.returncode
                raise StartError(f"{self.name} exited with code {code} before {pattern!r}: {self.why()}")
            return None

        try:
            return until(f"{self.name} to log {pattern!r}", logged, timeout_s, interval_s=0.1)
        except AssertionError:  # the bound: a StartError, as an exit is
            raise StartError(f"{self.name} did not log {pattern!r} within {timeout_s:.0f} s: {self.why()}") from None

    def why(self) -> str:
        """The first ERROR/FATAL line of the output and logs, with the
        exception a JVM printed under it (Kafka's cause: ``Socket server
        failed to bind to ...``); else the last line."""
        lines = [line.strip() for line in self.text().splitlines() if line.strip()]
        for n, line in enumerate(lines):
            if re.search(r"\b(ERROR|FATAL)\b", line):
                cause = next((c for c in lines[n + 1:n + 4] if _EXCEPTION.match(c)), None)
                return (line if cause is None else f"{line}: {cause}")[:600]
        return lines[-1][:600] if lines else "(no output)"

    def pause(self) -> None:
        """SIGSTOP: the process stands still, its sockets open."""
        self._signal(signal.SIGSTOP)
        self.paused = True

    def resume(self) -> None:
        self._signal(signal.SIGCONT)
        self.paused = False

    def kill(self) -> None:
        """kill -9, and reap it."""
        if self.alive:
            self._signal(signal.SIGKILL)
        self.reap(10.0)

    def terminate(self, timeout_s: float = 30.0) -> int | None:
        """SIGTERM (continued first if paused); kill -9 after ``timeout_s``. The exit code."""
        if self.alive:
            if self.paused:
                self.resume()
            self._signal(signal.SIGTERM)
        return self.reap(timeout_s)

    def reap(self, timeout_s: float) -> int | None:
        if self.proc is None:
            return None
        try:
            self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self._signal(signal.SIGKILL)
            self.proc.wait(10.0)
        if self in LIVE:
            LIVE.remove(self)
        return self.proc.returncode

    def _signal(self, sig: signal.Signals) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, sig)


@functools.cache
def main_class(release: KafkaRelease, simple_name: str) -> str:
    """The fully qualified main class named ``simple_name`` in ``release``'s
    jars: tools move between packages (DumpLogSegments is ``kafka.tools`` in
    4.0 and 4.1, ``org.apache.kafka.tools`` in 4.4)."""
    suffix = f"/{simple_name}.class"
    for jar in sorted((release.home / "lib").glob("kafka*.jar")):
        with zipfile.ZipFile(jar) as z:
            for name in z.namelist():
                if name.endswith(suffix) and "$" not in name:
                    return name.removesuffix(".class").replace("/", ".")
    raise LookupError(f"no {simple_name} class in {release}'s jars ({release.home / 'lib'})")


def java_args(release: KafkaRelease, log4j: Path, main: str, *args: str, logs_dir: Path | None = None) -> list[str]:
    extra = [f"-Dkafka.logs.dir={logs_dir}"] if logs_dir is not None else []
    return ["java", *JVM_OPTIONS, f"-Dlog4j2.configurationFile={log4j}", *extra, "-cp", release.classpath, main,
            *args]


def run_tool(release: KafkaRelease, simple_name: str, *args: str, work: Path, timeout_s: float = 180.0,
             stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Kafka's tool ``simple_name`` (``DumpLogSegments``, ``MetadataQuorumCommand``,
    ``MetadataShell``, ``StorageTool``, ...) run by its main class, as its
    ``bin/*.sh`` script does; stdout and stderr as text."""
    log4j = work / "tools-log4j2.properties"
    if not log4j.exists():
        work.mkdir(parents=True, exist_ok=True)
        log4j.write_text(TOOL_LOG4J)
    command = java_args(release, log4j, main_class(release, simple_name), *args)
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, input=stdin,
                          stdin=None if stdin is not None else subprocess.DEVNULL)
