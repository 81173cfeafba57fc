"""What the seeded simulation sweeps share: fold their per-seed results."""

from __future__ import annotations

from collections import Counter


def sweep_totals(results: list[Counter[str] | str]) -> Counter[str]:
    """Sum the stats of every seed; fail with the first failure's replay
    message if any seed failed (a failure is its message, a str), or if a
    run did not converge."""
    failures = [r for r in results if isinstance(r, str)]
    assert not failures, f"{len(failures)} of {len(results)} seeds failed; the first:\n{failures[0]}"
    totals: Counter[str] = Counter()
    for stats in results:
        assert not isinstance(stats, str)
        totals.update(stats)
    assert totals["converged"] == len(results)
    return totals
