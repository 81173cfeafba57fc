"""Shared test helpers: where ../shared is, and a skip when it is absent."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# Resolved: ../shared may be a symlink, and the tools print resolved paths
# (dump-log's "file") -- paths are compared resolved.
SHARED = (REPO.parent / "shared").resolve()


def shared_path(*parts: str) -> Path:
    """A path under ../shared, or a skip naming what is missing."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"reference material not present: {path} (tests that need ../shared skip without it)")
    return path
