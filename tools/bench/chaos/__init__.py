"""``kraft bench chaos``: faults as Jepsen throws them at real node processes, judged by a checker over the files.

May import anything below ``kraft.tools``; pyfuse3 (the FUSE disk) and matplotlib (the timeline) inside functions.

Network partitions in namespaces, power loss on a FUSE disk that drops
unsynced writes, kill, pause, a full disk, failing fsync, overlapping. See
:mod:`.run`."""

from kraft.tools.bench.chaos.checker import chaos_ok
from kraft.tools.bench.chaos.command import chaos_bench_command, format_chaos_report
from kraft.tools.bench.chaos.run import ChaosError, ChaosOptions, run_chaos
from kraft.tools.bench.chaos.scenarios import register_scenario

__all__ = ["ChaosError", "ChaosOptions", "chaos_bench_command", "chaos_ok", "format_chaos_report",
           "register_scenario", "run_chaos"]
