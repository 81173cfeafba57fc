"""``kraft spark export``/``report`` progress: a tqdm bar over the job's tasks
on a terminal, nothing when stderr is piped (a fake status tracker: no Spark)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from kraft.tools.spark.spark_command import Progress


@dataclass
class StageInfo:
    numCompletedTasks: int  # noqa: N815 - Spark's names
    numTasks: int  # noqa: N815
    numActiveTasks: int  # noqa: N815
    numFailedTasks: int  # noqa: N815


class Tracker:
    def __init__(self) -> None:
        self.stages: dict[int, StageInfo] = {}

    def getActiveStageIds(self) -> list[int]:  # noqa: N802
        return list(self.stages)

    def getStageInfo(self, stage_id: int) -> StageInfo | None:  # noqa: N802
        return self.stages.get(stage_id)


class FakeSpark:
    def __init__(self) -> None:
        self.tracker = Tracker()
        self.sparkContext = self

    def statusTracker(self) -> Tracker:  # noqa: N802
        return self.tracker


def test_nothing_is_drawn_when_stderr_is_piped(capsys: pytest.CaptureFixture[str]) -> None:
    spark = FakeSpark()
    spark.tracker.stages[0] = StageInfo(1, 4, 2, 0)
    with Progress(spark, "export", interval=0.01) as progress:  # capsys: stderr is not a terminal
        assert not progress.enabled
    assert capsys.readouterr().err == ""


def test_the_bar_counts_tasks_of_every_stage(capsys: pytest.CaptureFixture[str]) -> None:
    spark: Any = FakeSpark()
    progress = Progress(spark, "export", enabled=True)
    spark.tracker.stages[0] = StageInfo(3, 4, 1, 0)
    progress._update()
    assert (progress._bar.n, progress._bar.total) == (3, 4)
    del spark.tracker.stages[0]  # stage 0 finished (all 4 done), stage 1 runs
    spark.tracker.stages[1] = StageInfo(1, 2, 1, 1)
    progress._update()
    assert (progress._bar.n, progress._bar.total) == (5, 6)
    progress.__exit__(None, None, None)
    assert "export" in capsys.readouterr().err
