"""``/image/acls`` on a snapshot without ACLs, as Kafka's shell shows it.

Kafka's ``AclsImageNode.childNames()`` (metadata/.../image/node/AclsImageNode.java,
4.0 and 4.1) returns ``List.of("byId")`` whatever the image holds, so
``find /image`` lists an empty ``/image/acls/byId`` directory; the real
4.0.0 and 4.1.0 outputs in fixtures/real-tool-outputs agree on
every snapshot without ACLs they recorded. Ours must too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kraft.image.session import ShellSession
from kraft.image.metadata_source import image_from_snapshot_file
from kraft.image.tree import build_tree
from tests import golden
from tests.conftest import fixture_path

FILES = ("kafka-4.0.0-metadata-shell.jsonl", "kafka-4.1.0-metadata-shell.jsonl")


def _find_records(name: str) -> list[dict[str, object]]:
    out = []
    for record in golden.read_recorded(name):
        # Kafka's argv mode may print a partly loaded image (waitUntilCaughtUp waits for the
        # first batch only, see test_kafka_shell_golden): only its complete answers count here.
        complete = record.get("mode") == "stdin-session" or record.get("rc") == 0
        if record.get("cmd") in (["find", "/image"], ["find", "/image/acls"]) and record.get("stdout") and complete:
            out.append(record)
    return out


def _acls_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("/image/acls")]


@pytest.mark.parametrize("name", FILES)
def test_find_lists_an_empty_acls_by_id_as_kafka_does(name: str) -> None:
    records = _find_records(name)
    assert records, f"no find record in {name}"
    empty = 0
    for record in records:
        snapshot = str(record["snapshot"])
        path: Path = fixture_path(*snapshot[len("fixtures:"):].split("/"))
        image = image_from_snapshot_file(path)
        ours = ShellSession(build_tree(image), interactive=False).run(" ".join(record["cmd"]))  # type: ignore[arg-type]
        kafka = _acls_lines(str(record["stdout"]))
        if not image.acls:
            assert kafka == ["/image/acls", "/image/acls/byId"], (snapshot, kafka)
            empty += 1
        assert _acls_lines(ours) == kafka, (name, snapshot)
    assert empty, f"no snapshot without ACLs among the find records of {name}"
