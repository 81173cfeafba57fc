"""The run's timeline picture from its history (:mod:`.history`): faults as
bands, each node's role over time, and the commit rate (acknowledged
records per second). Drawn with matplotlib (the ``chaos`` extra), imported
here only; SVG or PNG by the file's suffix."""

from __future__ import annotations

from pathlib import Path

from kraft.tools.bench.chaos.run_history import read_history

__all__ = ["draw_timeline"]

ROLE_COLOURS = {"leader": "#d62728", "follower": "#2ca02c", "candidate": "#ff7f0e", "prospective": "#ffbb78",
                "unattached": "#bcbd22", "resigned": "#9467bd", "observer": "#17becf", "witness": "#8c564b",
                "starting": "#c7c7c7", "down": "#7f7f7f"}
FAULT_COLOURS = {"partition": "#1f77b4", "power-loss": "#e377c2", "kill": "#7f7f7f", "pause": "#bcbd22",
                 "disk-full": "#8c564b", "fsync": "#9467bd", "lying-disk": "#d62728"}


def draw_timeline(history: Path, out: Path, nodes: list[int]) -> Path:
    """Draw ``history`` into ``out``; ``out``. ImportError without matplotlib."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    events = read_history(history)
    end = max((e["t"] for e in events), default=1.0) or 1.0
    fig, (ax, rate_ax) = plt.subplots(2, 1, figsize=(14, 2 + 0.5 * len(nodes)), sharex=True,
                                      gridspec_kw={"height_ratios": [max(2, len(nodes)), 2]})
    rows = {n: i for i, n in enumerate(nodes)}
    # Faults: a band over the target nodes' rows, from start to end.
    starts = {e["id"]: e for e in events if e["type"] == "fault" and e.get("phase") == "start"}
    ends = {e["id"] for e in events if e["type"] == "fault" and e.get("phase") == "end"}
    for e in events:
        if e["type"] == "fault" and e.get("phase") == "end" and e["id"] in starts:
            start = starts.pop(e["id"])
            for n in start["nodes"]:
                if n in rows:
                    ax.axvspan(start["t"], e["t"], ymin=rows[n] / len(rows), ymax=(rows[n] + 1) / len(rows),
                               color=FAULT_COLOURS.get(e["kind"], "#aaaaaa"), alpha=0.25, lw=0)
            if len(starts) + len(ends) < 60:  # a long run's labels would only overlap: the colours say it
                ax.text(start["t"], len(rows) - 0.45, e["kind"], fontsize=6, rotation=90, va="top")
    # Roles: one bar per node, coloured by its role from each change to the next.
    current: dict[int, tuple[float, str]] = {}
    for e in events + [{"t": end, "type": "role", "node": n, "role": "end"} for n in nodes]:
        if e["type"] != "role" or e["node"] not in rows:
            continue
        before = current.get(e["node"])
        if before is not None:
            ax.broken_barh([(before[0], e["t"] - before[0])], (rows[e["node"]] - 0.15, 0.3),
                           color=ROLE_COLOURS.get(before[1], "#cccccc"))
        current[e["node"]] = (e["t"], e["role"])
    ax.set_yticks(range(len(nodes)), [f"node {n}" for n in nodes])
    ax.set_ylim(-0.5, len(nodes) - 0.5)
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in ROLE_COLOURS.values()]
    ax.legend(handles, list(ROLE_COLOURS), fontsize=6, ncol=len(ROLE_COLOURS), loc="lower left",
              bbox_to_anchor=(0, 1.0))
    # Commit rate: acknowledged records per second.
    buckets = [0] * (int(end) + 1)
    for e in events:
        if e["type"] == "ack" and e["t"] >= 0:
            buckets[min(int(e["t"]), len(buckets) - 1)] += 1
    rate_ax.plot(range(len(buckets)), buckets, lw=0.8)
    kinds = sorted({e["kind"] for e in events if e["type"] == "fault"})
    rate_ax.legend([plt.Rectangle((0, 0), 1, 1, color=FAULT_COLOURS.get(k, "#aaaaaa"), alpha=0.4) for k in kinds],
                   [f"fault: {k}" for k in kinds], fontsize=6, ncol=max(1, len(kinds)), loc="upper right")
    rate_ax.set_ylabel("acks/s")
    for e in events:
        if e["type"] in ("faults", "heal"):
            for axis in (ax, rate_ax):
                axis.axvline(e["t"], color="black", lw=0.6, ls="--")
    rate_ax.set_xlabel("seconds since the nodes started (dashed: the faults begin, everything healed)")
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)
    return out
