"""``kraft bench controller``: three ``kraft node start`` controllers against
three real Kafka controllers, each with three real Kafka brokers, in one
run; every figure printed for both sides with the ratio (the figures
themselves are not asserted: no timing assertions). Without ``java`` or
without Kafka's jars: one line naming what is missing and ``bash .ci/deps``,
exit 1 (the tool refuses, as Kafka's tools exit 1), no traceback."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from kraft.errors import EXIT_REFUSED
from tests.harness import cli
from tests.kafka.releases import require

_FIGURE = r"kraft +[\d,.]+ ?(/s|s|MiB)  Kafka +[\d,.]+ ?(/s|s|MiB)  ratio \(kraft / Kafka\) \d+\.\d\dx$"


@pytest.mark.slow
def test_bench_controller_prints_four_figures_for_both_sides_and_the_ratio() -> None:
    release = require("4.4.0")
    env = {**os.environ, "KRAFT_KAFKA_LIBS": str(release.home / "lib")}
    done = cli.run("bench", "controller", "--topics", "30", env=env, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    lines = done.stdout.splitlines()
    # Both sides ran every phase, each on its own cluster.
    started = [m.group(1) for line in lines
               if (m := re.match(r"(kraft|Kafka): starting 3 controllers, then 3 Kafka 4\.4\.0 brokers", line))]
    assert started == ["kraft", "Kafka"]
    assert len([line for line in lines if "kill -9 of the active controller" in line]) == 2
    assert len([line for line in lines if re.match(r"  kill -9 of broker 103 \(leader of \d+ partitions\)", line)]) == 2
    report = lines[lines.index("") + 1:]
    assert report[0] == ("30 topics x 3 partitions, RF 3, 3 Kafka 4.4.0 brokers: 3 `kraft node start` controllers "
                         "(kraft) against 3 Kafka 4.4.0 controllers (Kafka)")
    labels = ["topics created per second:", "broker kill -9 to new leaders:", "controller kill -9 to CreateTopics:",
              "active controller RSS:"]
    for label, line in zip(labels, report[1:5], strict=True):
        assert line.startswith(label) and re.search(_FIGURE, line), line
    assert re.fullmatch(r"load average [\d.]+ at the start, [\d.]+ at the end, on \d+ CPUs", report[5])


def test_without_java_one_line_names_it_and_the_fix(tmp_path: Path) -> None:
    # A PATH with no java on it (the interpreter runs by its full path).
    done = cli.run("bench", "controller", "--topics", "1", env={**os.environ, "PATH": str(tmp_path)}, timeout=60)
    assert done.returncode == EXIT_REFUSED
    assert done.stdout == "" and "Traceback" not in done.stderr
    assert done.stderr == ("Error: no `java` on PATH: the bench runs real Kafka; install a JDK 17+ "
                           "(`bash .ci/deps` installs it and fetches Kafka's jars)\n")


def test_without_kafka_jars_one_line_names_where_and_the_fix(tmp_path: Path) -> None:
    require("4.4.0")  # java on PATH
    env = {k: v for k, v in os.environ.items() if k != "KRAFT_KAFKA_LIBS"}
    done = cli.run("bench", "controller", "--topics", "1", env={**env, "KRAFT_KAFKA_CACHE": str(tmp_path)}, timeout=60)
    assert done.returncode == EXIT_REFUSED
    assert done.stdout == "" and "Traceback" not in done.stderr
    assert done.stderr == (f"Error: no Kafka jars in {tmp_path}/4.4.0/lib: fetch Kafka 4.4.0's with `bash .ci/deps` "
                           "(or set KRAFT_KAFKA_LIBS to a Kafka libs/ directory)\n")
    # A KRAFT_KAFKA_LIBS naming a directory without Kafka's jars is named as such.
    done = cli.run("bench", "controller", "--topics", "1", env={**env, "KRAFT_KAFKA_LIBS": str(tmp_path)}, timeout=60)
    assert done.returncode == EXIT_REFUSED
    assert done.stderr == (f"Error: no Kafka jars in $KRAFT_KAFKA_LIBS={tmp_path}: fetch Kafka 4.4.0's with "
                           "`bash .ci/deps`\n")
