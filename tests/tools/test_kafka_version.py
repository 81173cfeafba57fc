"""``--kafka-version X.Y`` and ``$KRAFT_KAFKA_VERSION``: which Kafka release
the Kafka look-alike tools print as (:mod:`kraft.kafka_release`). The
default is the newest (4.4.0); ``4.0`` is 4.0.0, ``4.1`` 4.1.0; anything
else is refused in one line naming the known ones. The 4.4 facts pinned here
were read off 4.4.0's own tools (tests/kafka/test_tools_live.py runs them). The golden replays (tests/golden.py) check
the outputs themselves; this checks the option's plumbing on every tool."""

from __future__ import annotations

from pathlib import Path

import pytest
from kraft.kafka_release import ENV_VAR, LATEST, RELEASES, UnknownKafkaVersion, kafka_release
from kraft.records.bootstrap import read_bootstrap_checkpoint
from tests.harness import cli

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qg"


def _run(*args: str, env: dict[str, str] | None = None) -> tuple[str, str, int]:
    result = cli.invoke(list(args), env=env)
    return result.stdout, result.stderr, result.exit_code


KNOWN = "4.0.0, 4.0.2, 4.1.0, 4.1.1, 4.1.2, 4.2.0, 4.2.1, 4.2.2, 4.3.0, 4.3.1, 4.4.0 (X.Y: its first release)"


def test_resolution_order() -> None:
    assert kafka_release(None, {}) is LATEST and LATEST.name == "4.4.0"
    assert kafka_release(None, {ENV_VAR: "4.0"}) is RELEASES["4.0.0"]
    assert kafka_release("4.1", {ENV_VAR: "4.0"}) is RELEASES["4.1.0"]  # the option wins
    assert kafka_release("4.4.0", {ENV_VAR: "4.0"}) is RELEASES["4.4.0"]
    # Each patch release is its own: X.Y is the line's first.
    assert kafka_release(" 4.0.2 ", {}) is RELEASES["4.0.2"] is not RELEASES["4.0.0"]
    assert kafka_release("4.2", {}) is RELEASES["4.2.0"] and kafka_release("4.3.1", {}) is RELEASES["4.3.1"]
    for unknown in ("3.9", "4.4.1", "4.0.1", "4.5"):
        with pytest.raises(UnknownKafkaVersion, match=rf"^unknown Kafka version '{unknown}' \(--kafka-version\): "
                                                      r"kraft prints as Kafka 4\.0\.0, 4\.0\.2, .*, 4\.4\.0 \(X\.Y: its first "
                                                      r"release\)$"):
            kafka_release(unknown, {})
    with pytest.raises(UnknownKafkaVersion, match=f"'latest' \\({ENV_VAR}\\)"):
        kafka_release(None, {ENV_VAR: "latest"})


@pytest.mark.parametrize("args", [
    ["storage", "--kafka-version", "9.9", "version-mapping"],
    ["storage", "version-mapping", "--kafka-version", "9.9"],
    ["features", "--kafka-version", "9.9", "version-mapping"],
    ["quorum", "--kafka-version", "9.9", "describe", "--status"],
    ["dump-log", "--kafka-version", "9.9", "--files", "x.log"],
    ["shell", "--kafka-version", "9.9", "-s", "x.checkpoint", "ls"],
])
def test_an_unknown_version_is_a_one_line_usage_error_on_every_tool(args: list[str]) -> None:
    stdout, stderr, code = _run(*args)
    assert (stdout, code) == ("", 2)
    assert stderr == f"Error: unknown Kafka version '9.9' (--kafka-version): kraft prints as Kafka {KNOWN}\n"


def test_an_unknown_version_in_the_environment_is_a_configuration_error() -> None:
    stdout, stderr, code = _run("storage", "version-mapping", env={ENV_VAR: "3.9"})
    assert (stdout, code) == ("", 3)
    assert stderr == f"Error: unknown Kafka version '3.9' ({ENV_VAR}): kraft prints as Kafka {KNOWN}\n"


def test_version_mapping_per_release_option_and_environment() -> None:
    latest = _run("storage", "version-mapping")[0]
    # What 4.4.0's kafka-storage.sh version-mapping printed (run).
    assert latest == ("metadata.version=33 (4.4-IV2)\nkraft.version=1\ntransaction.version=2\ngroup.version=1\n"
                      "eligible.leader.replicas.version=1\nshare.version=2\nstreams.version=1\n")
    as_41 = _run("storage", "version-mapping", "--kafka-version", "4.1")[0]
    assert as_41.splitlines()[0] == "metadata.version=27 (4.1-IV1)" and as_41.endswith("streams.version=0\n")
    as_40 = "metadata.version=25 (4.0-IV3)\nkraft.version=1\ntransaction.version=2\ngroup.version=1\n" \
            "eligible.leader.replicas.version=0\n"
    assert _run("storage", "--kafka-version", "4.0", "version-mapping")[0] == as_40
    assert _run("features", "version-mapping", "--kafka-version", "4.0")[0] == as_40
    assert _run("storage", "version-mapping", env={ENV_VAR: "4.0"})[0] == as_40
    # The option beats the environment.
    assert _run("storage", "version-mapping", "--kafka-version", "4.4", env={ENV_VAR: "4.0"})[0] == latest


def test_feature_dependencies_follow_the_release() -> None:
    """What each release's ``kafka-storage.sh feature-dependencies`` printed
    (run live on every release): group.version=1 has no dependencies in
    any; kraft.version=1 needs metadata.version 3.9-IV0 in 4.0.0 and 4.1.0
    only (KRaftVersion changed in 4.0.2 and 4.1.1)."""
    args = ["storage", "feature-dependencies", "--feature", "group.version=1", "--feature", "kraft.version=1"]
    none = "group.version=1 has no dependencies.\nkraft.version=1 has no dependencies.\n"
    needs = "group.version=1 has no dependencies.\nkraft.version=1 requires:\n    metadata.version=21 (3.9-IV0)\n"
    assert _run(*args)[0] == none
    for version, expected in (("4.0", needs), ("4.0.2", none), ("4.1", needs), ("4.1.1", none), ("4.3.1", none)):
        assert _run(*args, "--kafka-version", version)[0] == expected, version


def test_version_mapping_of_42_and_43() -> None:
    """``kafka-storage.sh version-mapping`` of 4.2.0 and 4.3.0 (run live):
    their production metadata.version, and 4.3's share.version stopping at 1
    where 4.4's is 2 (ShareVersion.SV_2, 4.4-IV0)."""
    assert _run("storage", "version-mapping", "--kafka-version", "4.2")[0] == (
        "metadata.version=29 (4.2-IV1)\nkraft.version=1\ntransaction.version=2\ngroup.version=1\n"
        "eligible.leader.replicas.version=1\nshare.version=1\nstreams.version=1\n")
    as_43 = _run("storage", "version-mapping", "--kafka-version", "4.3.0", "-r", "4.4-IV0")[0]
    assert as_43.startswith("metadata.version=31 (4.4-IV0)\n") and "share.version=1\n" in as_43
    assert "share.version=2\n" in _run("storage", "version-mapping", "--kafka-version", "4.4", "-r", "4.4-IV0")[0]
    assert _run("storage", "version-mapping", "--kafka-version", "4.3")[0].startswith("metadata.version=30 (4.3-IV0)\n")


def test_feature_dependencies_refuse_a_level_the_release_does_not_have() -> None:
    """share.version=2 came with metadata.version 4.4-IV0: Kafka 4.1.0's
    tool refuses it, 4.4.0's answers (run live: test_tools_live)."""
    args = ["storage", "feature-dependencies", "--feature", "share.version=2"]
    refused = ("", "Feature level 2 is not supported for feature share.version\n", 1)
    assert _run(*args, "--kafka-version", "4.1") == refused
    assert _run(*args, "--kafka-version", "4.4") == ("share.version=2 has no dependencies.\n", "", 0)
    assert _run(*args, "--kafka-version", "4.0") == ("", "Unknown feature: share.version\n", 1)


def test_format_follows_the_release(tmp_path: Path) -> None:
    """Formatter: LATEST_PRODUCTION is the default, latestTesting() the maximum,
    and a release not yet production needs unstable.feature.versions.enable."""
    out, err, code = _run("storage", "format", "--kafka-version", "4.0", "-t", CLUSTER, "--node-id", "1",
                          "--metadata-log-dir", str(tmp_path / "m40"))
    assert (out, err, code) == (f"Formatting metadata directory {tmp_path / 'm40'} with metadata.version 4.0-IV3.\n",
                                "", 0)
    names = [m.name for m in read_bootstrap_checkpoint(tmp_path / "m40" / "bootstrap.checkpoint")]
    assert names == ["metadata.version", "group.version", "transaction.version"]
    # 4.0.0 knows no 4.1-IV1; 4.1.0 knows 4.2-IV0 but calls it unstable.
    _, err, code = _run("storage", "format", "--kafka-version", "4.0", "-t", CLUSTER, "--node-id", "1",
                        "--metadata-log-dir", str(tmp_path / "x"), "-r", "4.1-IV1")
    assert (err, code) == ("Version 4.1-IV1 is not a valid version. The minimum version is 3.3-IV3 and the maximum "
                           "version is 4.1-IV0\n", 1)
    _, err, code = _run("storage", "format", "--kafka-version", "4.1", "-t", CLUSTER, "--node-id", "1",
                        "--metadata-log-dir", str(tmp_path / "x"), "-r", "4.2-IV0")
    assert (err, code) == ("metadata.version 4.2-IV0 is not yet stable.\n", 1)
    config = tmp_path / "unstable.properties"
    config.write_text(f"process.roles=broker\nnode.id=1\nlog.dirs={tmp_path / 'm42'}\n"
                      "unstable.feature.versions.enable=true\n")
    out, err, code = _run("storage", "format", "--kafka-version", "4.1", "-t", CLUSTER, "-c", str(config), "-r",
                          "4.2-IV0")
    assert (err, code) == ("", 0) and out.endswith("with metadata.version 4.2-IV0.\n")
    # share.version is a 4.1 feature: 4.0.0's formatter does not know it.
    _, err, code = _run("storage", "format", "--kafka-version", "4.0", "-t", CLUSTER, "--node-id", "1",
                        "--metadata-log-dir", str(tmp_path / "y"), "--feature", "share.version=0")
    assert code == 1 and err.startswith("Unsupported feature: share.version. Supported features are: ")
