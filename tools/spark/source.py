"""The ``kraft`` PySpark data source (Spark 4's Python Data Source API).

::

    from kraft.tools.spark.source import register
    register(spark)
    df = spark.read.format("kraft").load("/data/kafka-logs")          # a log dir, a
    df = spark.read.format("kraft").load(["/a/*/__cluster_metadata-0",  # glob, files...
                                          "/b/00000000000000000000.log"])

One row per record of every ``.log`` segment and ``.checkpoint`` snapshot
found (see :mod:`kraft.tools.spark.plan` for discovery and splitting,
:mod:`kraft.tools.spark.rows` for the columns and the error rows).

Options (case-insensitive):

- ``mode``: ``PERMISSIVE`` (default; problems become rows with ``error_kind``)
  or ``FAILFAST`` (the first problem fails the job);
- ``maxPartitionBytes`` (default ``16m``): largest input partition; larger
  segments are split at batch boundaries;
- ``minPartitions`` (default 1): cut splits small enough that at least this
  many tasks get work (the CLI passes Spark's default parallelism);
- ``clusterId``: the cluster expected; files whose ``meta.properties`` names
  another one become one ``cluster_mismatch`` row each;
- ``batchRows`` (default 8192): rows per Arrow batch handed to Spark.

- ``pushdown`` (default false; needs :func:`register`): filters on
  ``record_type``, ``offset``, ``cluster_id``, ``node_id``, ``file`` and
  ``file_kind`` are pushed down (PySpark 4.1+): files, batches and records
  they rule out are not read or not decoded (:mod:`kraft.tools.spark.pushdown`).
  Off by default because PySpark 4.3 shares pushed filters between two scans
  of one DataFrame (see :meth:`KraftPushdownReader.pushFilters`).
Column pruning is not offered to Python data sources by PySpark (4.3): every
column is built.

This module imports pyspark; nothing else in kraft imports it (the CLI loads
it lazily), so ``import kraft`` never needs Spark.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from collections.abc import Iterator, Mapping
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
)

from kraft.tools.spark.plan import (
    DEFAULT_MAX_PARTITION_BYTES,
    FILTERED_MAX_PARTITION_BYTES,
    FileSplit,
    PlanError,
    parse_size,
    plan,
)
from kraft.tools.spark.pushdown import Pushed, push
from kraft.tools.spark.columnar import read_splits
from kraft.tools.spark.rows import COLUMNS, DEFAULT_BATCH_ROWS, arrow_schema

FORMAT = "kraft"

_SPARK_TYPES: dict[str, DataType] = {
    "string": StringType(),
    "binary": BinaryType(),
    "bool": BooleanType(),
    "int8": ByteType(),
    "int16": ShortType(),
    "int32": IntegerType(),
    "int64": LongType(),
    "list<int32>": ArrayType(IntegerType()),
}

#: The declared schema of the data source (the columns of spark_rows.COLUMNS).
SCHEMA = StructType(
    [StructField(name, _SPARK_TYPES[kind], nullable=True, metadata={"comment": doc}) for name, kind, doc in COLUMNS]
)


def _paths(options: Mapping[str, str]) -> list[str]:
    """``load(path)`` passes ``path``; ``load([p1, p2])`` passes ``paths`` as a JSON list."""
    out: list[str] = []
    if options.get("paths"):
        out.extend(json.loads(options["paths"]))
    if options.get("path"):
        out.append(options["path"])
    return out


class KraftPartition(InputPartition):
    """One task's worth of file splits."""

    def __init__(self, splits: list[FileSplit]) -> None:
        super().__init__(splits)
        self.splits = splits

    def __repr__(self) -> str:
        files = {s.file.path for s in self.splits}
        size = sum(s.length for s in self.splits)
        return f"KraftPartition({len(self.splits)} splits of {len(files)} files, {size} bytes)"


class KraftReader(DataSourceReader):
    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        mode = options.get("mode", "PERMISSIVE").upper()
        if mode not in ("PERMISSIVE", "FAILFAST"):
            raise PlanError(f"mode must be PERMISSIVE or FAILFAST, got {mode!r}")
        if schema != SCHEMA:
            raise PlanError("the kraft data source has a fixed schema: do not pass .schema(...)")
        self.failfast = mode == "FAILFAST"
        self.paths = _paths(options)
        given = options.get("maxPartitionBytes")
        #: As the caller gave it (parsed here, so a bad one fails at once); None:
        #: the default, which depends on the filters pushed later.
        self.max_partition_bytes = None if given is None else parse_size(given)
        self.min_partitions = int(options.get("minPartitions", 1))
        self.cluster_id = options.get("clusterId") or None
        self.batch_rows = int(options.get("batchRows", DEFAULT_BATCH_ROWS))
        self.schema = schema
        self.pushed = Pushed()
        self.pushdown = options.get("pushdown", "false").lower() == "true"

    def partitions(self) -> list[InputPartition]:
        planned = plan(
            self.paths,
            max_partition_bytes=self.planned_partition_bytes(),
            min_partitions=self.min_partitions,
            expected_cluster_id=self.cluster_id,
        )
        pushed = self.pushed
        partitions = [
            [s for s in p if pushed.keeps_file(s.file.cluster_id, s.file.node_id, s.file.path, s.file.kind)]
            for p in planned.partitions
        ]
        # files the filters rule out are never opened; keep one (empty) task at least
        kept = [p for p in partitions if p] or [[]]
        return [KraftPartition(p) for p in kept]

    def planned_partition_bytes(self) -> int:
        """``maxPartitionBytes`` as given; else the default, larger under a
        pushed ``record_type`` filter (see :data:`FILTERED_MAX_PARTITION_BYTES`)."""
        if self.max_partition_bytes is not None:
            return self.max_partition_bytes
        return FILTERED_MAX_PARTITION_BYTES if self.pushed.record_types is not None else DEFAULT_MAX_PARTITION_BYTES

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, KraftPartition)
        yield from read_splits(
            partition.splits, failfast=self.failfast, batch_rows=self.batch_rows,
            schema=_expected_arrow_schema(self.schema), pushed=self.pushed,
        )


class KraftPushdownReader(KraftReader):
    """The reader with filter pushdown. PySpark refuses a reader that
    implements ``pushFilters`` unless ``spark.sql.python.filterPushdown.enabled``
    is true, so this one is used only where that is set (:func:`register`)."""

    def pushFilters(self, filters: list[Any]) -> Iterator[Any]:  # noqa: N802 - PySpark's name
        """Keep the filters we can read less with (see :mod:`kraft.tools.spark.pushdown`)
        and hand every filter back: Spark still checks them on what we return.

        Only with ``pushdown=true``: PySpark 4.3 lets two scans of one
        DataFrame under different filters (a self-join, a union, the
        report's segments against its snapshots) share the filters pushed to
        one of them, and the other then misses rows. A DataFrame read with
        ``pushdown=true`` must be scanned once per query."""
        if self.pushdown:
            self.pushed = push(filters, self.pushed)
        yield from filters


def _expected_arrow_schema(schema: StructType) -> Any:
    """The Arrow schema this Spark checks batches against (ours if it cannot say)."""
    try:
        from pyspark.sql.pandas.types import to_arrow_schema

        return to_arrow_schema(schema, timezone="UTC")
    except (ImportError, TypeError):
        return arrow_schema()


class KraftDataSource(DataSource):
    """``spark.read.format("kraft")``: Kafka ``__cluster_metadata`` segments and snapshots."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> StructType:
        return SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return KraftReader(self.options, schema)


class KraftPushdownDataSource(KraftDataSource):
    """``format("kraft")`` with filter pushdown (registered by :func:`register`)."""

    def reader(self, schema: StructType) -> DataSourceReader:
        return KraftPushdownReader(self.options, schema)


#: the session setting without which PySpark refuses a reader with pushFilters
FILTER_PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def register(spark: SparkSession) -> None:
    """Make ``spark.read.format("kraft")`` available in this session, able
    to push filters down (this turns on ``spark.sql.python.filterPushdown.enabled``;
    a read pushes them with ``.option("pushdown", "true")``).

    Without this call, where kraft is installed as a package, Spark finds the
    format by itself (the ``pyspark_kraft`` module), without pushdown."""
    spark.conf.set(FILTER_PUSHDOWN_CONF, "true")
    spark.dataSource.register(KraftPushdownDataSource)


#: Where a local master's driver binds and is reached: loopback, so a run on
#: a laptop opens no port on the machine's public interface (Spark's default
#: is the address its host name resolves to, else the first interface's).
LOOPBACK = "127.0.0.1"
_LOOPBACK_KEYS = ("spark.driver.bindAddress", "spark.driver.host")


def _spark_defaults() -> dict[str, str]:
    """``spark-defaults.conf`` (SPARK_CONF_DIR, else SPARK_HOME/conf): what the
    user configured for every session, which a default of ours must not override."""
    conf_dir = os.environ.get("SPARK_CONF_DIR") or (
        os.path.join(os.environ["SPARK_HOME"], "conf") if os.environ.get("SPARK_HOME") else None)
    out: dict[str, str] = {}
    if conf_dir is None:
        return out
    try:
        with open(os.path.join(conf_dir, "spark-defaults.conf"), encoding="utf-8") as f:
            for line in f:
                parts = line.strip().split(None, 1)
                if parts and not parts[0].startswith("#"):
                    out[parts[0]] = parts[1].strip() if len(parts) > 1 else ""
    except OSError:
        pass
    return out


def loopback_settings(conf: Mapping[str, str] | None) -> dict[str, str]:
    """The driver's bind address and host for a local master: loopback,
    unless the user chose them (``conf``, spark-defaults.conf, or
    SPARK_LOCAL_IP / SPARK_LOCAL_HOSTNAME in the environment)."""
    if os.environ.get("SPARK_LOCAL_IP") or os.environ.get("SPARK_LOCAL_HOSTNAME"):
        return {}
    chosen = set(conf or {}) | set(_spark_defaults())
    if chosen & set(_LOOPBACK_KEYS):
        return {}
    return {key: LOOPBACK for key in _LOOPBACK_KEYS}


def session(
    master: str | None = "local[*]",
    *,
    app_name: str = "kraft",
    conf: Mapping[str, str] | None = None,
    ui: bool = False,
) -> SparkSession:
    """A SparkSession with the ``kraft`` format registered.

    In local mode the Python workers run this interpreter (so they import
    this kraft); on a cluster the executors need kraft installed (see the
    docs/tools/spark.md). A master of ``None`` keeps what ``spark-submit`` configured.
    """
    local = master is not None and master.startswith("local")
    loopback: dict[str, str] = {}
    if local:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        loopback = loopback_settings(conf)
        if loopback:
            # Also the JVM's own choice of local address (Utils.localIpAddress),
            # which it logs as "using <public address> instead" otherwise.
            os.environ["SPARK_LOCAL_IP"] = LOOPBACK
    # pyspark warns about pandas >= 3 on import of its Arrow helpers; the data
    # source does not use pandas.
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)
    builder = SparkSession.builder.appName(app_name).config("spark.ui.enabled", "true" if ui else "false")
    if master:
        builder = builder.master(master)
    if local:
        builder = builder.config("spark.sql.shuffle.partitions", "8")
    for key, value in loopback.items():
        builder = builder.config(key, value)
    if local and "spark.python.daemon.module" not in (conf or {}):
        # Workers end quietly when a show/take/limit hangs up on them (see the module).
        builder = builder.config("spark.python.daemon.module", "kraft.tools.spark.daemon")
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    register(spark)
    return spark


def read(spark: SparkSession, paths: list[str], **options: Any) -> Any:
    """``spark.read.format("kraft").options(**options).load(paths)``."""
    reader = spark.read.format(FORMAT)
    for key, value in options.items():
        if value is not None:
            reader = reader.option(key, str(value))
    return reader.load(paths if len(paths) != 1 else paths[0])


def decode_in_driver(paths: list[str], *, failfast: bool = False, cluster_id: str | None = None) -> Any:
    """The rows ``read`` returns, decoded in this process: a ``pyarrow.Table``
    of the data source's Arrow schema. Raises
    :class:`~kraft.tools.spark.plan.PlanError` and, with ``failfast``,
    :class:`~kraft.tools.spark.rows.KraftReadError`."""
    import pyarrow as pa

    schema = _expected_arrow_schema(SCHEMA)
    planned = plan(paths, expected_cluster_id=cluster_id)
    batches = [b for p in planned.partitions for b in read_splits(p, failfast=failfast, schema=schema)]
    return pa.Table.from_batches(batches, schema=schema)


def dataframe_of(spark: SparkSession, table: Any) -> Any:
    """A DataFrame of the data source's schema over a table of
    :func:`decode_in_driver` (one local relation)."""
    return spark.createDataFrame(table, schema=SCHEMA)


def read_in_driver(spark: SparkSession, paths: list[str], *, failfast: bool = False,
                   cluster_id: str | None = None) -> Any:
    """The rows ``read`` returns, decoded in this process and handed to Spark
    as one local relation (Spark's own answer for small local data).

    For an input that one task would read anyway this skips the data
    source's Python planner processes and the task's Python worker, which
    cost seconds on a small input. The driver must see the files and holds
    every row: for small inputs on a local master only (the CLI's choice).
    Errors are raised here (see :func:`decode_in_driver`), not when a job runs."""
    return dataframe_of(spark, decode_in_driver(paths, failfast=failfast, cluster_id=cluster_id))
