"""What the multi-process tests ask a running quorum, as an operator would:
``metadata-quorum describe --status`` from a subprocess, and a polling wait."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Sequence

#: ``kraft`` from this interpreter (the installed script needs the venv on PATH).
KRAFT = (sys.executable, "-m", "kraft.cli")


def describe_status(ports: dict[int, int], *, kraft: Sequence[str] = KRAFT, env: dict[str, str] | None = None) -> str:
    """``describe --status`` of the quorum on ``ports``; empty if it did not answer."""
    bootstrap = ",".join(f"127.0.0.1:{p}" for p in ports.values())
    out = subprocess.run([*kraft, "metadata-quorum", "--bootstrap-controller", bootstrap, "describe", "--status"],
                         capture_output=True, text=True, env=env, timeout=120)
    return out.stdout if out.returncode == 0 else ""


def wait_for(predicate: Callable[[], object], what: str, timeout_s: float) -> None:
    """Poll ``predicate`` every 0.5 s; fail naming ``what`` after ``timeout_s``
    (a bound that ends a hung test, not a speed requirement)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.5)
    raise AssertionError(f"{what} within {timeout_s} s")
