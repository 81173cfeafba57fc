"""Multi-node interaction transcripts (``interaction/testdata/*.txt``),
replayed by :mod:`tests.raft.interaction.driver`: whole clusters of cores,
one command at a time. A transcript whose output is stale fails here;
``pytest tests/raft/test_interaction.py --rewrite-transcripts`` rewrites it
(review the diff)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.raft.interaction.driver import COMMANDS, run_interaction
from tests.raft.transcripts import TranscriptError, check_or_rewrite

TESTDATA = Path(__file__).parent / "interaction" / "testdata"
SCENARIOS = sorted(TESTDATA.glob("*.txt"))


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_interaction(path: Path, request: pytest.FixtureRequest) -> None:
    steps, observed = run_interaction(path)
    check_or_rewrite(path, steps, observed, request.config.getoption("--rewrite-transcripts"))


def test_every_command_is_used_by_some_transcript() -> None:
    used = {line.split()[0] for p in SCENARIOS for line in p.read_text().splitlines()
            if line and not line.startswith(("#", " ", "-", ">")) and line.split()[0] in COMMANDS}
    assert used == set(COMMANDS)


def test_a_stale_expectation_is_reported_not_accepted(tmp_path: Path) -> None:
    path = tmp_path / "stale.txt"
    path.write_text("add-nodes 1\n----\nok\n\nstatus\n----\n1: Leader epoch=7\n")
    steps, observed = run_interaction(path)
    assert [s.expected for s in observed] != [s.expected for s in steps]


def test_the_same_transcript_prints_the_same_output_each_run() -> None:
    path = TESTDATA / "election_pre_vote.txt"
    assert run_interaction(path)[1] == run_interaction(path)[1]


def test_an_unknown_command_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    path.write_text("add-nodes 3\n----\nok\n\nwarp 1\n----\nok\n")
    with pytest.raises(TranscriptError, match="bad.txt:5: warp 1: unknown command 'warp'"):
        run_interaction(path)


def test_the_excerpt_in_the_development_guide_is_a_real_transcript() -> None:
    """docs/development.md shows part of a transcript: it must still be one."""
    guide = (Path(__file__).parents[2] / "docs" / "development.md").read_text()
    excerpt = guide.split("## Interaction transcripts", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    assert excerpt in (TESTDATA / "prevote_partitioned_follower.txt").read_text()
