"""The SCRAM accounts a node reads at start (kraft/node/credentials.py):
those of ``kraft storage format --add-scram``, in either layout -- Kafka 4.4's
KIP-1170 bootstrap snapshot (the default) and ``bootstrap.checkpoint``
(``--kafka-version`` before 4.4) -- as Kafka's ``BootstrapMetadata.fromDirectory``
reads the legacy file first."""

from __future__ import annotations

from pathlib import Path

import pytest
from kraft.node.credentials import load_bootstrap_credentials
from kraft.wire.security import ScramCredentialStore
from tests.harness import cli

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qk"
ALICE = "SCRAM-SHA-256=[name=alice,password=alice-secret]"


@pytest.mark.parametrize(("release", "bootstrap_file"), [
    ((), "__cluster_metadata-0/00000000000000000000-0000000000.checkpoint"),
    (("--kafka-version", "4.3"), "bootstrap.checkpoint"),
])
def test_the_formatted_account_is_read_from_either_layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          release: tuple[str, ...], bootstrap_file: str) -> None:
    monkeypatch.delenv("KRAFT_KAFKA_VERSION", raising=False)
    meta = tmp_path / "meta"
    result = cli.invoke(["storage", "format", *release, "-t", CLUSTER, "--node-id", "1",
                                       "--metadata-log-dir", str(meta), "--add-scram", ALICE])
    assert result.exit_code == 0, result.output
    assert (meta / bootstrap_file).is_file()
    store = ScramCredentialStore()
    assert load_bootstrap_credentials(meta, store) == 1
    assert store.users() == [("SCRAM-SHA-256", "alice")]


def test_no_bootstrap_metadata_is_no_account(tmp_path: Path) -> None:
    assert load_bootstrap_credentials(tmp_path, ScramCredentialStore()) == 0
