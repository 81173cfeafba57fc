"""The role scenarios as transcripts (``testdata/*.txt``), replayed by one driver.

Each file is one scenario: commands to one replica and, under each, what it
did (see :mod:`tests.raft.transcripts` for the format). A scenario whose
expectation changed on purpose is rewritten with
``pytest tests/raft/test_transcripts.py --rewrite-transcripts``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.raft.transcripts import TranscriptError, check_or_rewrite, header_of, parse, render, run_transcript

TESTDATA = Path(__file__).parent / "testdata"
SCENARIOS = sorted(TESTDATA.glob("*.txt"))


def test_there_are_scenarios_for_every_protocol_area() -> None:
    names = {p.stem.split("_")[0] for p in SCENARIOS}
    assert {"election", "prevote", "truncation", "snapshot", "voters"} <= names


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_transcript(path: Path, request: pytest.FixtureRequest) -> None:
    steps, observed = run_transcript(path)
    check_or_rewrite(path, steps, observed, request.config.getoption("--rewrite-transcripts"))


def test_a_transcript_that_the_replica_does_not_follow_fails(tmp_path: Path) -> None:
    """The driver compares: a wrong expectation is reported, not rewritten."""
    path = tmp_path / "wrong.txt"
    path.write_text("replica id=1 voters=1\n----\nrole: None -> Follower epoch=0 (nothing like this)\n")
    steps, observed = run_transcript(path)
    assert observed[0].expected != steps[0].expected


def test_a_command_the_driver_does_not_know_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    path.write_text("replica id=1 voters=1,2,3\n----\nok\n\nwarp speed=9\n----\nok\n")
    with pytest.raises(TranscriptError, match="bad.txt:5: warp speed=9: unknown command 'warp'"):
        run_transcript(path)


def test_render_keeps_comments_and_round_trips() -> None:
    text = "# header\n\n# why\nstate\n----\nrole: x\n"
    steps = parse(text)
    assert render(steps, header_of(text)) == text
