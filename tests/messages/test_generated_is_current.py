"""Generated code is committed; it must be exactly what the generator makes
from messages/specs today."""

from __future__ import annotations

from pathlib import Path

from kraft.messages.codegen.generate import render

ROOT = Path(__file__).resolve().parents[2] / "messages"


def test_generated_modules_match_the_specs() -> None:
    expected = render([ROOT / "specs"])
    out = ROOT / "generated"
    actual = {p.name: p.read_text(encoding="utf-8") for p in out.glob("*.py")}
    stale = sorted(n for n in expected if actual.get(n) != expected[n])
    extra = sorted(set(actual) - set(expected))
    assert not stale and not extra, (
        f"messages/generated is stale (changed: {stale}, no longer generated: {extra}); "
        "run `python -m kraft.messages.codegen` and commit the result")


def test_generator_runs_on_kafka_specs_unchanged(tmp_path: Path) -> None:
    from tests.conftest import fixture_path
    from kraft.messages.codegen import generate

    spec = fixture_path("kafka-spec")
    changed = generate([spec / "message", spec / "metadata", spec / "raft"], tmp_path / "out")
    # One module per spec (the repository keeps Kafka's specs of the messages we define).
    assert len(changed) >= len(list(spec.glob("*/*.json"))) > 100
    for path in changed:
        compile(path.read_text(encoding="utf-8"), str(path), "exec")
