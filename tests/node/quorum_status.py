"""What the multi-process tests ask a running quorum, as an operator would:
``metadata-quorum describe --status`` from a subprocess, and a polling wait."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence

#: ``kraft`` from this interpreter (the installed script needs the venv on PATH).
KRAFT = (sys.executable, "-m", "kraft.cli")


def describe_status(ports: dict[int, int], *, kraft: Sequence[str] = KRAFT, env: dict[str, str] | None = None) -> str:
    """``describe --status`` of the quorum on ``ports``; empty if it did not answer."""
    bootstrap = ",".join(f"127.0.0.1:{p}" for p in ports.values())
    out = subprocess.run([*kraft, "metadata-quorum", "--bootstrap-controller", bootstrap, "describe", "--status"],
                         capture_output=True, text=True, env=env, timeout=120)
    return out.stdout if out.returncode == 0 else ""


