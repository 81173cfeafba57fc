"""Real Kafka brokers beside kraft controllers, run from Kafka's released
jars: located, formatted with Kafka's own ``StorageTool``, started as
``kafka.Kafka server.properties`` (what ``kafka-server-start.sh`` runs) and
stopped. The quickstart's Kafka cluster uses it.

The jars come from ``$KRAFT_KAFKA_LIBS`` or the newest complete download
under ``~/.cache/kraft/kafka/VERSION/lib`` (``bash .ci/deps`` fetches them
from Maven Central); ``java`` from ``PATH``.
"""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

from kraft.tools.kafka_jars import locate_kafka_libs

__all__ = ["JVM_OPTIONS", "KafkaBroker", "KafkaJars", "SERVER_LOG4J", "STARTED", "file_log4j", "find_kafka",
           "jars_version"]

#: Small JVMs: a laptop (or a two-core bench) runs several beside the
#: controllers. C1 alone and the serial collector halve a JVM's start-up
#: CPU; the heap holds a broker with a few thousand partitions.
JVM_OPTIONS = ("-Xmx384m", "-Xms32m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:CICompilerCount=1",
               "-Xss512k", "-Djava.awt.headless=true")

#: Kafka logs this once a broker is registered, unfenced and serving (``KafkaRaftServer.startup``).
STARTED = "Kafka Server started"

def file_log4j(file_name: str, level: str) -> str:
    """A log4j2 configuration writing ``level`` and above to ``file_name`` in
    the process's ``kafka.logs.dir``."""
    return f"""\
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = ${{sys:kafka.logs.dir}}/{file_name}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = {level}
rootLogger.appenderRef.file.ref = file
"""


#: A server's log4j2 configuration: everything at INFO to ``server.log`` in
#: its folder (what Kafka's own config/log4j2.yaml writes there).
SERVER_LOG4J = file_log4j("server.log", "INFO")

_KAFKA_JAR = re.compile(r"kafka_[\d.]+-(\d+\.\d+\.\d+)\.jar$")


@dataclass(frozen=True)
class KafkaJars:
    """``java`` and one release's jars: ``java -cp {libs}/*`` runs its classes."""

    java: str
    libs: Path
    #: The release the jars are (from ``kafka_2.13-X.Y.Z.jar``), None when no jar names it.
    version: str | None

    def main_class(self, simple_name: str) -> str:
        """The fully qualified class ``simple_name`` (tools move between
        packages: StorageTool is ``kafka.tools`` in 4.0, ``org.apache.kafka.tools`` later)."""
        suffix = f"/{simple_name}.class"
        for jar in sorted(self.libs.glob("kafka*.jar")):
            with zipfile.ZipFile(jar) as z:
                for name in z.namelist():
                    if name.endswith(suffix) and "$" not in name:
                        return name.removesuffix(".class").replace("/", ".")
        raise LookupError(f"no {simple_name} class in Kafka's jars in {self.libs}: fetch them again with "
                          "`bash .ci/deps`")

    def command(self, main: str, *args: str, log4j: Path | None = None, logs_dir: Path | None = None) -> list[str]:
        extra = [f"-Dlog4j2.configurationFile={log4j}"] if log4j is not None else []
        extra += [f"-Dkafka.logs.dir={logs_dir}"] if logs_dir is not None else []
        return [self.java, *JVM_OPTIONS, *extra, "-cp", f"{self.libs}/*", main, *args]


def jars_version(libs: Path) -> str | None:
    """The release of the jars in ``libs``, from the broker jar's name."""
    return next((m.group(1) for jar in sorted(libs.glob("kafka_*.jar")) if (m := _KAFKA_JAR.match(jar.name))), None)


def find_kafka() -> KafkaJars | str:
    """The jars and ``java``, or why not, as one line naming the fix."""
    java = shutil.which("java")
    if java is None:
        return "no java on PATH (install a JDK 17 or later, e.g. apt-get install openjdk-17-jre-headless)"
    libs = locate_kafka_libs()
    if libs is None:
        return ("no Kafka jars (set KRAFT_KAFKA_LIBS to a Kafka libs/ directory, or run bash .ci/deps, which "
                "fetches them from Maven Central into ~/.cache/kraft/kafka)")
    return KafkaJars(java, libs, jars_version(libs))


class KafkaBroker:
    """One real Kafka broker of a kraft-controlled cluster, in ``folder``."""

    def __init__(self, jars: KafkaJars, node_id: int, port: int, folder: Path, *, cluster_id: str, voters: str,
                 replication_factor: int) -> None:
        self.jars = jars
        self.node_id = node_id
        self.port = port
        self.folder = folder
        self.config = folder / "server.properties"
        self.proc: subprocess.Popen[bytes] | None = None
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "log4j2.properties").write_text(SERVER_LOG4J)
        keys = {
            "process.roles": "broker", "node.id": node_id, "controller.quorum.voters": voters,
            "listeners": f"PLAINTEXT://127.0.0.1:{port}", "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
            "inter.broker.listener.name": "PLAINTEXT", "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": folder / "data", "offsets.topic.replication.factor": replication_factor,
            "transaction.state.log.replication.factor": replication_factor,
            "transaction.state.log.min.isr": min(2, replication_factor), "group.initial.rebalance.delay.ms": 0,
        }
        self.config.write_text("".join(f"{k}={v}\n" for k, v in keys.items()))
        self.cluster_id = cluster_id

    @property
    def log(self) -> Path:
        return self.folder / "server.log"

    def format(self) -> None:
        """Kafka's ``kafka-storage.sh format`` of this broker's log directory."""
        done = subprocess.run(self.jars.command(self.jars.main_class("StorageTool"), "format", "-t", self.cluster_id,
                                                "-c", str(self.config), log4j=self.folder / "log4j2.properties",
                                                logs_dir=self.folder),
                              capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"kafka-storage format of broker {self.node_id} failed: "
                               f"{(done.stderr or done.stdout).strip()[-400:]}")

    def start(self) -> None:
        out = open(self.folder / "stdout.log", "ab")
        self.proc = subprocess.Popen(self.jars.command("kafka.Kafka", str(self.config),
                                                       log4j=self.folder / "log4j2.properties",
                                                       logs_dir=self.folder),
                                     stdout=out, stderr=subprocess.STDOUT)
        out.close()

    def wait_started(self, timeout_s: float = 180.0, count: int = 1) -> None:
        """Until the broker logged :data:`STARTED` ``count`` times (registered and unfenced)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            text = self.log.read_text(errors="replace") if self.log.exists() else ""
            if text.count(STARTED) >= count:
                return
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"broker {self.node_id} exited with code {self.proc.returncode}: see {self.log}")
            time.sleep(0.5)
        raise RuntimeError(f"broker {self.node_id} did not start within {timeout_s:.0f} s: see {self.log}")

    def kill(self) -> None:
        """kill -9."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self, timeout_s: float = 30.0) -> None:
        """A clean shutdown (SIGTERM: controlled shutdown), kill -9 if it hangs."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
