"""The load's complete history (:mod:`kraft.tools.bench.chaos.operations`):
each append's invocation and completion, as Jepsen keeps them; an
invocation whose process died before its completion (or whose completion
line a kill cut short) is ``info``, possibly committed."""

from __future__ import annotations

import json
from pathlib import Path

from kraft.tools.bench.chaos.operations import read_operations


def _line(kind: str, value: str, **fields: object) -> str:
    return json.dumps({"type": kind, "f": "append", "value": value, **fields}) + "\n"


def test_each_invocation_ends_ok_fail_or_info(tmp_path: Path) -> None:
    a, b = tmp_path / "operations-1.jsonl", tmp_path / "operations-2.jsonl"
    a.write_text(_line("invoke", "r1") + _line("ok", "r1", offset=7)
                 + _line("invoke", "r2") + _line("fail", "r2", error="not the leader")
                 + _line("invoke", "r3") + _line("info", "r3", error="no commit within 5 s")
                 + _line("invoke", "r4"))  # killed before its outcome
    b.write_text(_line("invoke", "r5") + '{"type": "ok", "f": "app')  # the completion cut by a kill
    ops = read_operations([a, b, tmp_path / "operations-3.jsonl"])  # the third never written
    assert ops.ok == [(7, b"r1")] and ops.fail == [b"r2"]
    assert sorted(ops.info) == [b"r3", b"r4", b"r5"]
    assert ops.counts() == {"invoked": 5, "ok": 1, "fail": 1, "info": 3}


def test_a_completion_without_its_invocation_is_no_operation(tmp_path: Path) -> None:
    path = tmp_path / "operations-1.jsonl"
    path.write_text(_line("ok", "r1", offset=1) + _line("invoke", "r2") + _line("ok", "r2", offset=2))
    ops = read_operations([path])
    assert ops.ok == [(2, b"r2")] and ops.counts()["invoked"] == 1
