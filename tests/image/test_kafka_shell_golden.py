"""Every output of Kafka 4.1.0's and 4.0.0's ``kafka-metadata-shell.sh``
recorded in ``fixtures/real-tool-outputs/kafka-4.1.0-metadata-shell.jsonl``
and ``kafka-4.0.0-metadata-shell.jsonl``, reproduced byte for byte on the same
snapshot files: 4.1.0's with kraft's default, 4.0.0's with ``--kafka-version
4.0`` (``/local/version`` and ``/local/commitId`` are the release's:
``LocalShellNode``).

Each snapshot's interactive session is replayed in one :class:`ShellSession`
(``cd`` carries over, as it did in Kafka's session); each ``argv`` record runs
in a fresh non-interactive session (Kafka's ``Commands(false)``).

Where Kafka (both releases) fails on its own bugs we do the sensible thing;
each such record is checked against what we print instead, derived from
Kafka's own output (see :func:`expected`), and listed in the README:

* ``zkMigrationState``: Kafka lists it (``FeaturesImageNode.childNames``) but
  ``child()`` returns null, so ``cat`` says "No such file", ``tree`` prints
  the name with nothing under it and ``find /``/``find /image`` abort with
  "Expected zkMigrationState to be a valid child". We print the state's name
  (``NONE``), as 3.x did.
* a default client-quota entity: Kafka names it with the empty string
  (``ls`` prints an empty line, ``tree`` prints ``:`` without its values,
  ``find`` aborts); we name it ``user(<default>)``.
* metadata.version 27 (4.1-IV1): 4.0.0 cannot load a 4.1 snapshot and shows
  an empty image; we open it, as 4.1.0 does, also with ``--kafka-version
  4.0`` (4.1.0's records of it are replayed whole).
* :data:`PARTIAL_LOADS`: a 4.0.0 run that ran before its snapshot was wholly
  applied (the shell does not wait for it; the fixtures README names it).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

from kraft.image.session import ShellSession
from kraft.image.metadata_source import image_from_snapshot_file
from kraft.image.tree import build_tree
from tests import golden
from tests.conftest import FIXTURES


#: (version, snapshot, mode, cmd) of the recorded runs made on a partly
#: applied image (the fixtures README): checked as a subsequence of ours.
PARTIAL_LOADS = {
    ("4.0.0", "fixtures:kafka-4.0-real/controller1/__cluster_metadata-0/00000000000000000358-0000000001.checkpoint",
     "argv", ("find", "/image")),
}


def _records(version: str) -> OrderedDict[str, list[dict[str, Any]]]:
    by_snapshot: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()
    for record in golden.records(golden.name("metadata-shell", version)):
        by_snapshot.setdefault(record["snapshot"], []).append(record)
    return by_snapshot


RECORDS_BY_VERSION = {version: _records(version) for version in golden.VERSIONS}
#: Kafka 4.0.0's records by snapshot (the audit's exclusions read them)
RECORDS = RECORDS_BY_VERSION["4.0.0"]
CASES = [pytest.param(version, snapshot, id=f"{version}:{snapshot}")
         for version, by_snapshot in RECORDS_BY_VERSION.items() for snapshot in by_snapshot]


def fixture_path(snapshot: str) -> Path:
    """The recordings' convention: ``fixtures:<path>`` is relative to the repository's fixtures/."""
    assert snapshot.startswith("fixtures:")
    return FIXTURES.joinpath(*snapshot[len("fixtures:"):].split("/"))


@lru_cache(maxsize=None)
def _image(snapshot: str) -> Any:
    return image_from_snapshot_file(fixture_path(snapshot))


@lru_cache(maxsize=None)
def _tree(snapshot: str, version: str = "4.1.0") -> Any:
    release = golden.release(version)
    return build_tree(_image(snapshot), version=release.version, commit_id=release.commit_id)


def _default_quota_lines(snapshot: str) -> list[str]:
    """Our names of the default entities Kafka 4.0.0 printed as empty lines."""
    session = ShellSession(_tree(snapshot))
    return [n for n in session.run("ls /image/clientQuotas").splitlines() if "<default>" in n]


def expected(snapshot: str, record: dict[str, Any], version: str = "4.1.0") -> str:
    """Kafka's stdout, with each of its known failures replaced by what we print."""
    cmd, out = record["cmd"], record["stdout"]
    joined = " ".join(cmd)
    if cmd[0] == "cat" and cmd[1].endswith("/zkMigrationState"):
        assert out.endswith("No such file or directory.\n")
        return "NONE\n"
    if cmd[0] == "tree" and cmd[1] == "/image/features":
        assert out.endswith("zkMigrationState:\n")
        return out + "  NONE\n"
    if cmd[0] == "find" and record.get("rc") == 1:
        # Kafka aborted part-way: our complete listing starts with what it printed,
        # and goes on with the child it could not open.
        return _complete_find(snapshot, record, version)
    if "clientQuotas" in joined and ("\n\n" in "\n" + out or out.startswith(":")):
        return _with_default_quota_entities(snapshot, record)
    return out


def _complete_find(snapshot: str, record: dict[str, Any], version: str) -> str:
    """Kafka aborted part-way. Ours lists everything: the lines Kafka printed
    (in the same order, and all of them unless the run is one of
    :data:`PARTIAL_LOADS`, made before the whole snapshot was applied:
    ``waitUntilCaughtUp`` only waits for the first applied batch), and the
    child Kafka could not open."""
    ours = ShellSession(_tree(snapshot, version), interactive=False).run(" ".join(record["cmd"]))
    kafka_lines, our_lines = record["stdout"].splitlines(), ours.splitlines()
    if (version, snapshot, record["mode"], tuple(record["cmd"])) in PARTIAL_LOADS:
        position = 0
        for line in kafka_lines:
            assert line in our_lines[position:], (line, record["cmd"])
            position = our_lines.index(line, position) + 1
        assert len(kafka_lines) < len(our_lines) - 1  # it is partial: more than the failed child is missing
    else:
        # Everything Kafka printed is our listing's start; ours goes on.
        assert our_lines[:len(kafka_lines)] == kafka_lines, record["cmd"]
    failed = re.search(r"Expected (.*) to be a valid child of (\S+), but it was not", record["stderr"])
    assert failed is not None
    name, parent = failed.group(1), failed.group(2)
    if name == "":  # the default quota entity: ours is named
        assert any(line.startswith(f"{parent}/") and "<default>" in line for line in our_lines)
    else:
        assert f"{parent}/{name}" in our_lines
    return ours


def _with_default_quota_entities(snapshot: str, record: dict[str, Any]) -> str:
    """``ls``/``tree`` of /image/clientQuotas with the default entity named."""
    cmd, out = record["cmd"], record["stdout"]
    defaults = _default_quota_lines(snapshot)
    assert len(defaults) == 1, defaults
    ours = ShellSession(_tree(snapshot)).run(" ".join(cmd))
    if cmd[0] == "ls":
        lines = out.splitlines()
        assert "" in lines
        lines.remove("")
        assert sorted(lines + defaults) == ours.splitlines()
    else:
        # tree: Kafka printed ":" and nothing under it; ours has the entity's values.
        assert out.startswith(":\n")
        assert ours.startswith(f"{defaults[0]}:\n  ") or f"\n{defaults[0]}:\n  " in ours
        rest = out[2:]
        block = re.search(rf"(^|\n)({re.escape(defaults[0])}:\n(  .*\n)+)", ours)
        assert block is not None
        assert ours.replace(block.group(2), "", 1) == rest
    return ours


CONTENT_BLIND = {("ls", "/"), ("ls", "/image"), ("ls", "/local"), ("cat", "/nope"), ("cd", "/nope"), ("pwd",),
                 ("cd", "/image/topics"), ("cat", "/image"), ("ls", "/local/version"), ("ls", "/image/topics"),
                 ("ls",), ("ls", "/image/cluster"), ("ls", "/image/acls"), ("ls", "/image/scram"),
                 ("ls", "/image/producerIds"), ("find", "/local"), ("cat", "/local/version"),
                 ("cat", "/local/commitId"), ("ls", "/image/topics/byName/nope")}


def kafka_could_not_load(records: list[dict[str, Any]]) -> bool:
    head = records[0]
    return "No MetadataVersion with feature level" in (head.get("stderr") or "")


def _replayed(record: dict[str, Any], records: OrderedDict[str, list[dict[str, Any]]]) -> bool:
    if record["cmd"] == ["<stdin-session>"] or "note" in record:
        return False
    return not kafka_could_not_load(records[record["snapshot"]]) or tuple(record["cmd"]) in CONTENT_BLIND


@golden.replays("metadata-shell@4.0.0", "tests/image/test_kafka_shell_golden.py")
def replayed(record: dict[str, Any]) -> bool:
    """The records test_every_recorded_output compares (it skips the same ones)."""
    return _replayed(record, RECORDS_BY_VERSION["4.0.0"])


@golden.replays("metadata-shell@4.1.0", "tests/image/test_kafka_shell_golden.py")
def replayed_41(record: dict[str, Any]) -> bool:
    return _replayed(record, RECORDS_BY_VERSION["4.1.0"])


@pytest.mark.parametrize("version,snapshot", CASES)
def test_every_recorded_output(version: str, snapshot: str) -> None:
    by_snapshot = RECORDS_BY_VERSION[version]
    records = by_snapshot[snapshot]
    if "note" in records[0]:
        # Kafka hangs on a snapshot of control records only: nothing was recorded.
        pytest.skip(f"Kafka {version} recorded nothing here (it hangs); see test_a_control_only_snapshot_opens")
    unloadable = kafka_could_not_load(records)
    session = ShellSession(_tree(snapshot, version), interactive=True)
    checked = 0
    for record in records:
        if record["cmd"] == ["<stdin-session>"]:
            continue
        if record["mode"] == "argv":
            result = ShellSession(_tree(snapshot, version), interactive=False).run_words(record["cmd"])
        else:
            result = session.run_words(record["cmd"])
        if not _replayed(record, by_snapshot):
            assert unloadable and version == "4.0.0"
            continue  # 4.0.0 showed an empty image: what we show is 4.1.0's, replayed
        want = expected(snapshot, record, version)
        assert result.text == want, f"{snapshot} {record['mode']} {record['cmd']}"
        error = want.startswith(f"{record['cmd'][0]}: ") and record["cmd"] != ["ls", "/local/version"]
        assert result.failed == error, record["cmd"]
        checked += 1
    assert checked > 0


def test_a_41_snapshot_opens() -> None:
    """Kafka 4.0.0 cannot load metadata.version 27 (4.1-IV1); we can."""
    snapshot = "fixtures:kafka-4.1-standalone-dynamic/__cluster_metadata-0/00000000000000007206-0000000001.checkpoint"
    session = ShellSession(_tree(snapshot))
    assert session.run("cat /image/features/metadataVersion") == "Optional[4.1-IV1]\n"
    assert session.run("ls /image/features") == ("finalized_eligible.leader.replicas.version\nfinalized_group.version\n"
                                                 "finalized_transaction.version\nmetadataVersion\nzkMigrationState\n")
    assert session.run("ls /image/topics/byName") == "SD\n__consumer_offsets\n"
    # SnapshotFileReader's offsets: records 3..66 of the file hold the metadata.
    assert session.run("cat /image/provenance").startswith("offset 66, epoch 1, time ")
    assert session.run("ls /image/configs") == "BROKER\nTOPIC:__consumer_offsets\n"
    boot = ShellSession(_tree("fixtures:kafka-4.1-standalone-dynamic/bootstrap.checkpoint"))
    assert boot.run("cat /image/features/metadataVersion") == "Optional[4.1-IV1]\n"


@pytest.mark.parametrize("path", [
    "kafka-4.0-real/controller1/__cluster_metadata-0/00000000000000000000-0000000000.checkpoint",
    "kafka-4.1-standalone-dynamic/__cluster_metadata-0/00000000000000000000-0000000000.checkpoint",
])
def test_a_control_only_snapshot_opens(path: str) -> None:
    """Kafka 4.0.0 hangs after "Loading..." on these; we show an empty image."""
    session = ShellSession(_tree(f"fixtures:{path}"))
    assert session.run("cat /image/provenance") == "offset -1, epoch -1, time 1969-12-31T23:59:59.999Z[UTC]\n"
    assert session.run("ls /image/topics/byName") == ""
    assert session.run("cat /image/features/metadataVersion") == "Optional.empty\n"
