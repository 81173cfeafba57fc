"""``kraft spark export`` and ``kraft spark report``: the metadata-log pipeline on Spark.

``export`` reads metadata directories through the ``kraft`` data source and
writes the rows as Parquet (or JSON lines) partitioned by cluster and record
type; ``report`` answers the standard questions (see
:mod:`kraft.tools.spark.report`) from metadata directories or from an export.

pyspark is imported only when a command runs, so ``kraft`` works without it.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

PARTITION_COLUMNS = ("cluster_id", "record_type")


def need_pyspark() -> None:
    try:
        import pyspark  # noqa: F401
        import pyarrow  # noqa: F401
    except ImportError as exc:
        raise click.ClickException(
            f"{exc.name} is not installed: pip install 'kraft[spark]' (pyspark>=4.0 with pyarrow) and a Java 17+ runtime"
        ) from None


def _note(message: str) -> None:
    click.echo(message, err=True)


class Progress:
    """A progress bar (tqdm, on stderr) over the running stages' tasks while a
    job runs; on a terminal only: nothing is drawn when stderr is piped."""

    def __init__(self, spark: Any, label: str, interval: float = 0.5, *, enabled: bool | None = None) -> None:
        self.tracker = spark.sparkContext.statusTracker()
        self.label = label
        self.interval = interval
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"kraft-progress-{label}", daemon=True)
        self._bar: Any = None
        self._seen: dict[int, tuple[int, int]] = {}

    def _counts(self) -> tuple[int, int, int]:
        """(completed, total, failed) tasks over every stage seen so far."""
        failed = 0
        active = set(self.tracker.getActiveStageIds())
        for stage_id, (_, total) in list(self._seen.items()):
            if stage_id not in active:  # finished since the last look
                self._seen[stage_id] = (total, total)
        for stage_id in active:
            info = self.tracker.getStageInfo(stage_id)
            if info is not None:
                self._seen[stage_id] = (info.numCompletedTasks, info.numTasks)
                failed += info.numFailedTasks
        done = sum(d for d, _ in self._seen.values())
        total = sum(t for _, t in self._seen.values())
        return done, total, failed

    def _update(self) -> None:
        done, total, failed = self._counts()
        if total == 0:
            return
        if self._bar is None:
            from tqdm import tqdm

            self._bar = tqdm(total=total, desc=self.label, unit="task", file=sys.stderr, leave=False)
        self._bar.total = total
        self._bar.n = done
        if failed:
            self._bar.set_postfix_str(f"{failed} failed", refresh=False)
        self._bar.refresh()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._update()

    def __enter__(self) -> Progress:
        if self.enabled:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        if self._bar is not None:
            self._bar.close()


_DRIVER_JAVA_OPTIONS = "spark.driver.extraJavaOptions"

#: The driver JVM's options for a small input on a local master (unless
#: ``--conf spark.driver.extraJavaOptions=...`` says otherwise): a session
#: of a few seconds spends more CPU in the C2 compiler than C2 code saves,
#: and on a small machine the compiler threads take cores from the work; the
#: serial collector suits a heap that small. On the shared fixtures the
#: report took 20.6 s after start-up with them, 27.2 s without.
SHORT_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


@contextmanager
def _spark(master: str, conf: tuple[str, ...], ui: bool, *, short: bool = False) -> Iterator[Any]:
    """The session for one command; ``short``: a small input on a local
    master, whose driver JVM is tuned for a short life (see SHORT_JVM_OPTIONS)."""
    need_pyspark()
    from kraft.tools.spark.source import session

    settings = {"spark.ui.showConsoleProgress": "false"}
    if short and master.startswith("local"):
        settings[_DRIVER_JAVA_OPTIONS] = SHORT_JVM_OPTIONS
    for item in conf:
        key, sep, value = item.partition("=")
        if not sep:
            raise click.BadParameter(f"expected KEY=VALUE, got {item!r}", param_hint="--conf")
        settings[key] = value
    from pyspark.sql import SparkSession

    # Inside an application that already runs Spark (a notebook, a test, a
    # spark-submit driver) use its session and leave it running.
    existing = SparkSession.getActiveSession()
    t0 = time.perf_counter()
    spark = session(master, app_name="kraft", conf=settings, ui=ui)
    if existing is None:
        spark.sparkContext.setLogLevel("ERROR")
        tuned = "; driver JVM tuned for a short session" if settings.get(_DRIVER_JAVA_OPTIONS) == SHORT_JVM_OPTIONS \
            else ""
        _note(f"spark {spark.version} started ({spark.sparkContext.master}, {time.perf_counter() - t0:.1f} s{tuned})")
    try:
        yield spark
    finally:
        if existing is None:
            spark.stop()


def _fits_one_partition(size: int, max_partition_bytes: str | None) -> bool:
    from kraft.tools.spark.plan import DEFAULT_MAX_PARTITION_BYTES, PlanError, parse_size

    try:
        return size <= parse_size(max_partition_bytes or DEFAULT_MAX_PARTITION_BYTES)
    except PlanError as e:
        raise click.BadParameter(str(e), param_hint="--max-partition-bytes") from None


def _size_text(size: int) -> str:
    return f"{size / 1e6:.1f} MB" if size >= 100_000 else f"{size / 1e3:.1f} kB"


def _read_input(spark: Any, inputs: tuple[str, ...], size: int, *, failfast: bool, max_partition_bytes: str | None,
                cluster_id: str | None, label: str) -> tuple[Any, Any]:
    """The records DataFrame of ``inputs`` (``size`` bytes), and their Arrow
    table when they were decoded in the driver (they fit one partition and
    the master is local), else None: the data source's tasks decode them."""
    from kraft.tools.spark.plan import PlanError
    from kraft.tools.spark.rows import KraftReadError
    from kraft.tools.spark.source import dataframe_of, decode_in_driver, read

    if cluster_id is None:
        _note_mixed_clusters(inputs)
    if spark.sparkContext.master.startswith("local") and _fits_one_partition(size, max_partition_bytes):
        # It fits one partition: decoding it here costs less than starting
        # the data source's Python planner and worker processes.
        t0 = time.perf_counter()
        try:
            table = decode_in_driver(list(inputs), failfast=failfast, cluster_id=cluster_id)
        except (PlanError, KraftReadError) as e:
            raise click.ClickException(f"{type(e).__name__}: {e}") from None
        _note(f"[{label}] {_size_text(size)} decoded in the driver ({time.perf_counter() - t0:.1f} s): "
              "small enough for one partition")
        return dataframe_of(spark, table), table
    _note(f"[{label}] {_input_partitions(spark, inputs, max_partition_bytes, cluster_id)} input partitions")
    return read(
        spark,
        list(inputs),
        mode="FAILFAST" if failfast else "PERMISSIVE",
        maxPartitionBytes=max_partition_bytes,
        minPartitions=spark.sparkContext.defaultParallelism,
        clusterId=cluster_id,
    ), None


#: Inputs up to this size are cached once decoded (``export``).
SMALL_INPUT_BYTES = 256 * 1024 * 1024


def _input_bytes(inputs: tuple[str, ...]) -> int:
    """Bytes of the metadata files the inputs name (0 when they cannot be listed: the read says why)."""
    from kraft.tools.spark.plan import PlanError, discover

    try:
        return sum(f.size for f in discover(list(inputs)))
    except PlanError:
        return 0


def _input_partitions(spark: Any, inputs: tuple[str, ...], max_partition_bytes: str | None, cluster_id: str | None) -> int:
    """The input partitions the read will have, planned here: asking Spark
    (``df.rdd.getNumPartitions()``) starts a Python planner process for it."""
    from kraft.tools.spark.plan import DEFAULT_MAX_PARTITION_BYTES, PlanError, parse_size, plan

    try:
        planned = plan(list(inputs), max_partition_bytes=parse_size(max_partition_bytes or DEFAULT_MAX_PARTITION_BYTES),
                       min_partitions=spark.sparkContext.defaultParallelism, expected_cluster_id=cluster_id)
    except PlanError:
        return 0  # the read says why
    return max(1, len(planned.partitions))


def _note_mixed_clusters(inputs: tuple[str, ...]) -> None:
    """Say so when the input spans clusters: nothing is wrong with any one
    file, but offsets of different clusters are unrelated."""
    from kraft.tools.spark.plan import PlanError, cluster_counts, discover

    try:
        counts = cluster_counts(discover(list(inputs)))
    except PlanError:
        return  # the read reports it
    if len(counts) > 1:
        listed = ", ".join(f"{c or 'no meta.properties'}: {n} files" for c, n in counts.items())
        _note(
            f"note: the input holds files of {len(counts)} clusters ({listed}); rows carry cluster_id and the "
            "report keeps clusters apart; --cluster-id X turns files of other clusters into cluster_mismatch rows"
        )


_master_option = click.option(
    "--master", default="local[*]", show_default=True,
    help="Spark master: local[N], spark://host:7077, yarn, k8s://... (see docs/tools/spark.md for clusters).",
)
_conf_option = click.option("--conf", multiple=True, metavar="KEY=VALUE", help="Extra Spark configuration (repeatable).")
_ui_option = click.option("--ui/--no-ui", default=False, show_default=True, help="Start the Spark web UI.")
_read_options = [
    click.option("--failfast", is_flag=True, help="Fail on the first damaged file or record instead of reporting it as a row."),
    click.option("--max-partition-bytes", default=None, help="Largest input partition (default 16m); larger segments are split at batch boundaries."),
    click.option("--cluster-id", default=None, help="Expected cluster id: files of other clusters become cluster_mismatch rows."),
]


def _with_read_options(fn: Any) -> Any:
    for option in reversed(_read_options):
        fn = option(fn)
    return fn


@click.group("spark", short_help="Decode metadata logs at scale with Spark.")
def spark_group() -> None:
    """Metadata-log analytics on Spark (needs pyspark and Java 17+)."""


@spark_group.command("export")
@click.option("--input", "inputs", multiple=True, required=True, help="Metadata directory, file or glob (repeatable).")
@click.option("--output", required=True, type=click.Path(file_okay=False), help="Where to write the rows.")
@click.option("--format", "fmt", type=click.Choice(["parquet", "json"]), default="parquet", show_default=True,
              help="Write Parquet, or JSON lines.")
@click.option("--overwrite", is_flag=True, help="Replace OUTPUT if it exists (default: fail).")
@_with_read_options
@_master_option
@_conf_option
@_ui_option
def export_command(inputs: tuple[str, ...], output: str, fmt: str, overwrite: bool, failfast: bool,
                   max_partition_bytes: str | None, cluster_id: str | None, master: str, conf: tuple[str, ...],
                   ui: bool) -> None:
    """Write one row per record of INPUT's segments and snapshots, partitioned by cluster_id and record_type."""
    check_output(output, overwrite)
    size = _input_bytes(inputs)
    with _spark(master, conf, ui, short=_fits_one_partition(size, max_partition_bytes)) as spark:
        df, table = _read_input(spark, inputs, size, failfast=failfast, max_partition_bytes=max_partition_bytes,
                                cluster_id=cluster_id, label="export")
        small = size <= SMALL_INPUT_BYTES
        if table is not None:
            # Written in one task (each task writes a file per cluster and
            # record type), summed up from the table at hand.
            df = df.coalesce(1)
        elif small:
            # Decoded once, written from the cache and summed up from it (a
            # large input is summed up from what was written instead); in
            # one task: for a small input opening files costs more than decoding.
            df = df.coalesce(1).cache()
        t0 = time.perf_counter()
        writer = df.write.mode("overwrite" if overwrite else "errorifexists").partitionBy(*PARTITION_COLUMNS)
        try:
            with Progress(spark, "export"):
                writer.format(fmt).save(output)
        except Exception as exc:  # noqa: BLE001 - Spark wraps everything; show the cause, not a JVM trace
            raise click.ClickException(_spark_error(exc)) from None
        elapsed = time.perf_counter() - t0
        if table is not None:
            summary, problems = table_summary(table)
        else:
            summary, problems = frame_summary(df if small else _read_back(spark, output, fmt))
        click.echo(
            f"wrote {summary['rows']:,} rows ({summary['records']:,} records, {summary['clusters']} clusters, "
            f"{summary['files']} files) to {output} as {fmt} in {elapsed:.1f} s"
        )
        for kind, count in problems:
            click.echo(f"  problems: {kind}: {count:,} (see the error column)")


def check_output(output: str, overwrite: bool) -> None:
    """Refuse, before Spark starts (half a minute of it), an output Spark
    would refuse after: one that exists without ``--overwrite`` (Spark's
    ``errorifexists`` mode) and a local path nothing can be written under
    (Spark's answer is a page of JVM stack trace). Probed by creating and
    removing a directory where the output's first missing part would go,
    which holds for root and read-only mounts alike. A URL (hdfs://, s3a://)
    is left to Spark."""
    import os
    import tempfile

    from kraft.errors import StorageError

    if "://" in output and not output.startswith("file://"):
        return
    path = Path(output.removeprefix("file://")).absolute()
    if path.exists() and not overwrite:
        raise click.ClickException(f"--output {output} already exists: pass --overwrite to replace it, "
                                   "or choose another --output")
    if path.exists() and not path.is_dir():
        raise click.ClickException(f"--output {output} is a file, not a directory: choose another --output")
    existing = next(p for p in (path, *path.parents) if p.exists())
    if not existing.is_dir():
        raise StorageError(f"cannot write --output {output}: {existing} is a file, not a directory "
                           "(choose another --output)")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".kraft-export-probe-", dir=existing))
    except OSError as e:
        raise StorageError(f"cannot write --output {output}: {existing}: {e.strerror} "
                           "(choose a directory you can write to)") from None


def frame_summary(df: Any) -> tuple[dict[str, int], list[tuple[str, int]]]:
    """Rows, records, clusters and files of an export, and its problems per
    ``error_kind`` (sorted), from the DataFrame."""
    from pyspark.sql import functions as F

    row = df.groupBy().agg(
        F.count("*").alias("rows"),
        F.count("offset").alias("records"),
        F.countDistinct("cluster_id").alias("clusters"),
        F.countDistinct("file").alias("files"),
    ).first()
    problems = df.where("error_kind is not null").groupBy("error_kind").count().orderBy("error_kind").collect()
    return row.asDict(), [(p["error_kind"], p["count"]) for p in problems]


def table_summary(table: Any) -> tuple[dict[str, int], list[tuple[str, int]]]:
    """:func:`frame_summary` of rows decoded in the driver, from their Arrow
    table (no Spark job; Spark's distinct counts skip nulls, as these do)."""
    import pyarrow.compute as pc

    summary = {
        "rows": table.num_rows,
        "records": table.num_rows - table.column("offset").null_count,
        "clusters": pc.count_distinct(table.column("cluster_id"), mode="only_valid").as_py(),
        "files": pc.count_distinct(table.column("file"), mode="only_valid").as_py(),
    }
    kinds = table.column("error_kind").drop_null().value_counts().to_pylist()
    return summary, sorted((k["values"], k["counts"]) for k in kinds)


def _read_back(spark: Any, path: str, fmt: str) -> Any:
    from kraft.tools.spark.source import SCHEMA

    # Partition values are strings: a cluster id like "1234" must stay one.
    spark.conf.set("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
    if fmt == "json":
        return spark.read.schema(SCHEMA).json(path)
    return spark.read.parquet(path)


def _spark_error(exc: Exception) -> str:
    text = str(exc)
    for marker in ("KraftReadError: ", "PlanError: "):
        if marker in text:
            return text[text.index(marker):].splitlines()[0]
    return text.splitlines()[0] if text else type(exc).__name__


# --- report ----------------------------------------------------------------------------------


def _bar_chart(rows: list[Any], label: Any, value: str, width: int = 50) -> list[str]:
    """A terminal bar chart: one line per row."""
    peak = max((r[value] or 0 for r in rows), default=0)
    lines = []
    for r in rows:
        v = r[value] or 0
        bar = "#" * (0 if peak == 0 else max(1 if v else 0, round(v * width / peak)))
        lines.append(f"  {label(r):<24} {v:>8,} {bar}")
    return lines


def leadership_chart(rows: list[Any], bucket: str, limit: int) -> list[str]:
    """The 'leadership over time' section: per cluster (never mixed), its
    buckets in time order (the last ``limit`` of them), leader changes then
    ISR changes as bar charts."""
    by_cluster: dict[Any, list[Any]] = {}
    for r in rows:
        by_cluster.setdefault(r["cluster"], []).append(r)
    lines: list[str] = []
    for cluster in sorted(by_cluster, key=lambda c: (c is None, str(c))):
        ordered = sorted(by_cluster[cluster], key=lambda r: r["start"])
        shown = ordered[-limit:]
        more = f" (last {limit} of {len(ordered)} buckets)" if len(ordered) > limit else ""
        lines.append(f"  cluster {cluster if cluster is not None else '(unknown)'}{more}")
        lines.append(f"  leader changes per {bucket}")
        lines.extend(_bar_chart(shown, lambda r: f"{r['start']:%Y-%m-%d %H:%M}", "leader_changes"))
        lines.append(f"  ISR changes per {bucket}")
        lines.extend(_bar_chart(shown, lambda r: f"{r['start']:%Y-%m-%d %H:%M}", "isr_changes"))
    return lines


def _table(rows: list[Any], columns: list[str]) -> list[str]:
    def text(v: Any) -> str:
        if v is None:
            return "-"
        if isinstance(v, list):
            return "[" + ",".join(str(x) for x in v) + "]"
        return str(v)

    cells = [[text(r[c]) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) if cells else len(c) for i, c in enumerate(columns)]
    out = ["  " + "  ".join(c.ljust(w) for c, w in zip(columns, widths))]
    out += ["  " + "  ".join(v.ljust(w) for v, w in zip(row, widths)) for row in cells]
    return out


@spark_group.command("report")
@click.option("--input", "inputs", multiple=True, help="Metadata directory, file or glob (repeatable).")
@click.option("--from-export", "export_path", type=click.Path(exists=True, file_okay=False), help="Read an export (Parquet or JSON) instead.")
@click.option("--export-format", type=click.Choice(["parquet", "json"]), default="parquet", show_default=True,
              help="The format of the --from-export input.")
@click.option("--section", "sections", multiple=True, help="Only these sections (repeatable); default: all.")
@click.option("--limit", type=int, default=20, show_default=True, help="Rows printed per section.")
@click.option("--bucket", default="1 hour", show_default=True, help="Time bucket of the leadership chart.")
@click.option("--topic", default=None, help="Only this topic in the topic and partition sections.")
@click.option("--csv-dir", type=click.Path(file_okay=False), default=None, help="Also write every section as CSV here (for plotting).")
@_with_read_options
@_master_option
@_conf_option
@_ui_option
def report_command(inputs: tuple[str, ...], export_path: str | None, export_format: str, sections: tuple[str, ...],
                   limit: int, bucket: str, topic: str | None, csv_dir: str | None, failfast: bool,
                   max_partition_bytes: str | None, cluster_id: str | None, master: str, conf: tuple[str, ...],
                   ui: bool) -> None:
    """Topic lifecycle, leader/ISR changes, broker fencing, config and feature changes, snapshot coverage."""
    if bool(inputs) == bool(export_path):
        raise click.UsageError("give either --input (metadata directories) or --from-export (an export)")
    need_pyspark()
    from kraft.tools.spark import report as R

    unknown = [s for s in sections if s not in R.SECTIONS]
    if unknown:
        raise click.BadParameter(f"unknown section(s) {', '.join(unknown)}; choose from {', '.join(R.SECTIONS)}", param_hint="--section")
    chosen = list(sections) or list(R.SECTIONS)
    size = _input_bytes(inputs) if inputs else 0
    with _spark(master, conf, ui, short=bool(inputs) and _fits_one_partition(size, max_partition_bytes)) as spark:
        if export_path:
            df = _read_back(spark, export_path, export_format)
        else:
            df, _ = _read_input(spark, inputs, size, failfast=failfast, max_partition_bytes=max_partition_bytes,
                                cluster_id=cluster_id, label="report")
        df = df.cache()
        try:
            with Progress(spark, "report"):
                _print_report(df, chosen, limit=limit, bucket=bucket, topic=topic, csv_dir=csv_dir)
        except click.ClickException:
            raise
        except Exception as exc:  # noqa: BLE001
            raise click.ClickException(_spark_error(exc)) from None


_ORDER = {
    "topic_lifecycle": ["cluster", "created"],
    "topic_events": ["cluster", "offset"],
    "partition_churn": ["leader_changes"],
    "broker_events": ["cluster", "offset"],
    "config_changes": ["cluster", "offset"],
    "feature_changes": ["cluster", "source", "offset"],
    "problems": ["file", "position"],
}


#: A section's rows are fetched in one job when there are at most this many
#: (their count is then known); a larger result is counted by a second job.
FETCH_ROWS = 10_000


#: Sections computed at once. Each is a chain of small Spark jobs whose
#: time goes to planning, code generation and scheduling in the driver, not
#: to the data: run side by side they overlap (on the shared fixtures the
#: sections took 20.6 s one after another, 18.2 s four at a time).
REPORT_THREADS = 4


def _section(df: Any, name: str, *, bucket: str, topic: str | None, events: Any) -> Any:
    """The DataFrame of one report section, filtered and ordered for printing."""
    from pyspark.sql import functions as F

    from kraft.tools.spark import report as R

    fn = R.SECTIONS[name]
    if name == "leadership_over_time":
        result = fn(df, bucket)
    elif name == "topic_events" and events is not None:
        result = events
    elif name == "topic_lifecycle" and events is not None:
        result = R.topic_lifecycle(df, events)
    else:
        result = fn(df)
    if topic is not None and "topic_name" in result.columns:
        result = result.where(F.col("topic_name") == topic)
    if name == "partition_churn":
        result = result.orderBy(F.desc("leader_changes"), F.desc("isr_changes"))
    elif name in _ORDER:
        result = result.orderBy(*_ORDER[name])
    return result


def _fetch(result: Any, name: str, *, limit: int, csv_dir: str | None) -> tuple[int, list[Any]]:
    """(rows in the section, the rows to print): the whole section for the
    chart, the first ``limit`` rows otherwise; CSV written first if asked."""
    if csv_dir is not None:
        result = result.cache()  # written and shown: computed once
        _write_csv(result, Path(csv_dir) / name)
    # Spark jobs cost more than small results: fetch up to FETCH_ROWS
    # rows at once; count separately only a result larger than that.
    fetched = result.limit(FETCH_ROWS + 1).collect()
    total = len(fetched) if len(fetched) <= FETCH_ROWS else result.count()
    if name == "leadership_over_time":
        return total, fetched if total <= FETCH_ROWS else result.collect()
    return total, fetched[:limit]


def _print_report(df: Any, sections: list[str], *, limit: int, bucket: str, topic: str | None, csv_dir: str | None) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from kraft.tools.spark import report as R

    events = None
    if "topic_events" in sections and "topic_lifecycle" in sections:
        events = R.topic_events(df).cache()  # both sections: computed once
    results = [_section(df, name, bucket=bucket, topic=topic, events=events) for name in sections]
    with ThreadPoolExecutor(REPORT_THREADS, thread_name_prefix="kraft-report") as pool:
        futures = [pool.submit(_fetch, result, name, limit=limit, csv_dir=csv_dir)
                   for name, result in zip(sections, results)]
        try:
            for name, result, future in zip(sections, results, futures):
                total, rows = future.result()
                _print_section(name, result.columns, total, rows, limit=limit, bucket=bucket)
        except BaseException:
            for future in futures:
                future.cancel()  # the session stops after: running jobs end with it
            raise


def _print_section(name: str, columns: list[str], total: int, rows: list[Any], *, limit: int, bucket: str) -> None:
    click.echo(f"\n== {name.replace('_', ' ')} ({total:,} rows{', first ' + str(limit) if total > limit else ''})")
    if not rows:
        click.echo("  (none)")
        return
    if name == "leadership_over_time":
        for line in leadership_chart(rows, bucket, limit):
            click.echo(line)
        return
    shown = [c for c in columns if c not in ("topic_id",) or name == "topic_lifecycle"]
    if name != "snapshot_coverage":
        shown = [c for c in shown if c != "log_dir"]
    for line in _table(rows, shown):
        click.echo(line)


def _write_csv(result: Any, path: Path) -> None:
    from pyspark.sql import functions as F

    flat = result.select(
        *[F.to_json(F.col(f.name)).alias(f.name) if f.dataType.typeName() in ("array", "struct", "map") else F.col(f.name)
          for f in result.schema.fields]
    )
    flat.coalesce(1).write.mode("overwrite").option("header", "true").csv(str(path))
