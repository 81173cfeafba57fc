"""Replay or sweep simulation seeds: ``python -m kraft.sim --seed 1234``."""

from __future__ import annotations

import argparse
import sys
import time

from kraft.sim.simulation import CLOCKS, DEFAULT_CHAOS_MS, STORAGES, SimulationFailure, simulate


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kraft.sim", description=__doc__)
    parser.add_argument("--seed", type=int, required=True, help="first seed to run")
    parser.add_argument("--count", type=int, default=1, help="run this many consecutive seeds")
    parser.add_argument("--voters", type=int, default=3)
    parser.add_argument("--observers", type=int, default=1)
    parser.add_argument("--chaos-ms", type=int, default=DEFAULT_CHAOS_MS)
    parser.add_argument(
        "--legacy-voters",
        type=int,
        default=None,
        help="voters answering pre-votes with UNSUPPORTED_VERSION (default: seed decides)",
    )
    parser.add_argument("--dynamic", action="store_true", help="a KIP-853 dynamic quorum (kraft.version 1)")
    parser.add_argument("--reconfig", action="store_true", help="inject voter changes (implies --dynamic)")
    parser.add_argument(
        "--auto-join", action=argparse.BooleanOptionalAction, default=None,
        help="observers add themselves as voters (default: the seed decides in --reconfig runs)",
    )
    parser.add_argument(
        "--storage", choices=STORAGES, default="memory",
        help="replica logs in memory, or the node's MetadataLog on real files with crashes tearing them",
    )
    parser.add_argument(
        "--clock", choices=CLOCKS, default="virtual",
        help="drive time from the event queue, or from trio's MockClock (same run either way)",
    )
    parser.add_argument(
        "--witnesses", default="",
        help="comma-separated node ids that run as witness voters (lead only hand-over epochs)",
    )
    parser.add_argument("--witness-detection", choices=("forced", "auto"), default="forced",
                        help="witnesses by kraft.witness=true, or detected from the others' ApiVersions")
    parser.add_argument("--scenario", choices=("behind-survivor",), default=None,
                        help="a fixed fault schedule instead of random faults")
    parser.add_argument("--stats", action="store_true", help="print coverage counters")
    args = parser.parse_args(argv)
    failures = 0
    started = time.perf_counter()
    for seed in range(args.seed, args.seed + args.count):
        try:
            result = simulate(
                seed,
                voters=args.voters,
                observers=args.observers,
                chaos_ms=args.chaos_ms,
                legacy_voters=args.legacy_voters,
                dynamic=args.dynamic,
                reconfig=args.reconfig,
                auto_join=args.auto_join,
                storage=args.storage,
                clock=args.clock,
                witnesses=tuple(int(i) for i in args.witnesses.split(",") if i.strip()),
                witness_detection=args.witness_detection,
                scenario=args.scenario,
            )
        except SimulationFailure as failure:
            failures += 1
            print(f"seed {seed}: FAILED\n{failure}", file=sys.stderr)
            continue
        line = (
            f"seed {seed}: ok, {result.events} events, {result.end_ms}ms virtual, "
            f"{result.committed_end} committed"
        )
        print(line)
        if args.stats:
            for key, value in sorted(result.stats.items()):
                print(f"    {key}: {value}")
    elapsed = time.perf_counter() - started
    print(f"{args.count - failures}/{args.count} seeds passed in {elapsed:.1f}s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
