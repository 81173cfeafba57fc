"""The figures real-Kafka tests measure: one JSON line each, printed (``-s``)
and appended to ``$KRAFT_INTEROP_REPORT`` when set, so a run's times can be
gathered without parsing pytest's output."""

from __future__ import annotations

import json
import os
from typing import Any


def report(version: str, scenario: str, **figures: Any) -> None:
    line = {"kafka": version, "scenario": scenario, **figures}
    print(json.dumps(line))
    path = os.environ.get("KRAFT_INTEROP_REPORT")
    if path:
        with open(path, "a") as out:
            out.write(json.dumps(line) + "\n")
