"""The standard questions about metadata logs, as DataFrame transformations.

Every function takes the DataFrame the ``kraft`` data source returns (or its
Parquet export read back) and returns a DataFrame; compose them freely::

    df = spark.read.format("kraft").load(paths)
    topic_events(df).where("topic_name = 'orders'").show()

Events are read from the log segments only (snapshots restate state, they do
not record changes) and counted once per cluster: the same record copied on
every voter (same cluster, same offset) is one event. Files without a
``meta.properties`` are grouped by their directory instead of a cluster id.
Each event carries ``controller_id``: the KRaft leader of the epoch that wrote
it, from the LeaderChange records (the metadata log records which controller
made a change, not which client asked for it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

#: ConfigResource.Type ids as ConfigRecord stores them.
RESOURCE_TYPES = {0: "unknown", 2: "topic", 4: "broker", 8: "broker_logger", 16: "client_metrics", 32: "group"}

#: PartitionChangeRecord's Leader when the leader did not change.
NO_LEADER_CHANGE = -2


def _directory(path: Column) -> Column:
    return F.regexp_extract(path, r"^(.*)/[^/]*$", 1)


def with_cluster(df: DataFrame) -> DataFrame:
    """Adds ``cluster``: the cluster id, or the partition directory when unknown,
    and ``log_dir``: the directory of the file."""
    log_dir = _directory(F.col("file"))
    return df.withColumn("log_dir", log_dir).withColumn("cluster", F.coalesce(F.col("cluster_id"), log_dir))


def problems(df: DataFrame) -> DataFrame:
    """Every row that reports a problem, file and position first."""
    return df.where(F.col("error_kind").isNotNull()).select(
        "cluster_id", "file", "position", "offset", "record_type_id", "error_kind", "error"
    )


def log_records(df: DataFrame, *record_types: str) -> DataFrame:
    """Decoded records of the log segments, one per (cluster, offset), with
    ``time``; only those of ``record_types`` when given (filtered before the
    copies on every voter are deduplicated: the copies of one offset are one
    record, and the shuffle then moves only the wanted rows)."""
    decoded = df.where(
        (F.col("file_kind") == "segment") & F.col("offset").isNotNull() & F.col("error_kind").isNull()
    )
    if record_types:
        decoded = decoded.where(F.col("record_type").isin(*record_types))
    return (
        with_cluster(decoded)
        .dropDuplicates(["cluster", "offset"])
        .withColumn("time", F.timestamp_millis(F.col("timestamp")))
    )


def leader_by_epoch(df: DataFrame) -> DataFrame:
    """``(cluster, epoch, controller_id)`` from the LeaderChange records."""
    return (
        with_cluster(df.where(F.col("record_type") == "LEADER_CHANGE"))
        .select(
            "cluster",
            F.col("partition_leader_epoch").alias("epoch"),
            F.get_json_object("payload", "$.leaderId").cast("int").alias("controller_id"),
        )
        .dropDuplicates(["cluster", "epoch"])
    )


def _with_controller(events: DataFrame, df: DataFrame) -> DataFrame:
    leaders = leader_by_epoch(df)
    return events.join(
        leaders, (events.cluster == leaders.cluster) & (events.partition_leader_epoch == leaders.epoch), "left"
    ).drop(leaders.cluster).drop("epoch")


def topic_names(df: DataFrame) -> DataFrame:
    """``(cluster, topic_id, topic_name)`` from every TopicRecord, snapshots included
    (a topic created before the log start is named only there)."""
    return (
        with_cluster(df.where(F.col("record_type") == "TOPIC_RECORD"))
        .select("cluster", "topic_id", "topic_name")
        .dropDuplicates(["cluster", "topic_id"])
    )


def topic_events(df: DataFrame) -> DataFrame:
    """Topic lifecycle: ``created`` (with its partition count), ``partitions_added``
    (one event per batch of new partitions), ``deleted``.

    A creation's partitions are the PartitionRecords that directly follow the
    TopicRecord (consecutive offsets, even across the batches of a large
    creation); later PartitionRecords of the topic are partitions added.
    """
    log = log_records(df, "TOPIC_RECORD", "PARTITION_RECORD", "REMOVE_TOPIC_RECORD")
    topics = log.where(F.col("record_type") == "TOPIC_RECORD").select(
        "cluster", "topic_id", F.col("offset").alias("topic_offset")
    )
    parts = (
        log.where(F.col("record_type") == "PARTITION_RECORD")
        .join(topics, ["cluster", "topic_id"], "left")
        .withColumn(
            "rank",
            F.row_number().over(Window.partitionBy("cluster", "topic_id").orderBy("offset")),
        )
        .withColumn(
            "at_creation",
            F.col("topic_offset").isNotNull() & (F.col("offset") - F.col("topic_offset") == F.col("rank")),
        )
    )
    created_counts = parts.where("at_creation").groupBy("cluster", "topic_id").agg(
        F.count("*").alias("partitions"), F.sort_array(F.collect_list("partition_id")).alias("partition_ids")
    )
    created = (
        log.where(F.col("record_type") == "TOPIC_RECORD")
        .join(created_counts, ["cluster", "topic_id"], "left")
        .select(
            "cluster", "topic_id", F.lit("created").alias("event"), "offset", "time", "partition_leader_epoch",
            F.coalesce("partitions", F.lit(0)).alias("partitions"), "partition_ids",
        )
    )
    added = (
        parts.where(~F.col("at_creation"))
        .groupBy("cluster", "topic_id", "batch_base_offset")
        .agg(
            F.min("offset").alias("offset"),
            F.min("time").alias("time"),
            F.first("partition_leader_epoch").alias("partition_leader_epoch"),
            F.count("*").alias("partitions"),
            F.sort_array(F.collect_list("partition_id")).alias("partition_ids"),
        )
        .select(
            "cluster", "topic_id", F.lit("partitions_added").alias("event"), "offset", "time",
            "partition_leader_epoch", "partitions", "partition_ids",
        )
    )
    deleted = log.where(F.col("record_type") == "REMOVE_TOPIC_RECORD").select(
        "cluster", "topic_id", F.lit("deleted").alias("event"), "offset", "time", "partition_leader_epoch",
        F.lit(None).cast("long").alias("partitions"), F.lit(None).cast("array<int>").alias("partition_ids"),
    )
    events = created.unionByName(added).unionByName(deleted)
    named = events.join(topic_names(df), ["cluster", "topic_id"], "left")
    return _with_controller(named, df).select(
        "cluster", "topic_name", "topic_id", "event", "offset", "time", "partitions", "partition_ids", "controller_id"
    )


def topic_lifecycle(df: DataFrame, events: DataFrame | None = None) -> DataFrame:
    """One row per topic: when it was created and deleted, partitions at
    creation and added later (from ``events``, :func:`topic_events` of
    ``df``, when the caller has them already)."""
    if events is None:
        events = topic_events(df)
    return events.groupBy("cluster", "topic_id").agg(
        F.first("topic_name", ignorenulls=True).alias("topic_name"),
        F.min(F.when(F.col("event") == "created", F.col("time"))).alias("created"),
        F.max(F.when(F.col("event") == "created", F.col("partitions"))).alias("partitions_at_creation"),
        F.sum(F.when(F.col("event") == "partitions_added", F.col("partitions"))).alias("partitions_added"),
        F.max(F.when(F.col("event") == "deleted", F.col("time"))).alias("deleted"),
    )


def partition_history(df: DataFrame) -> DataFrame:
    """Every PartitionRecord and PartitionChangeRecord of the log: the leader
    (null when unchanged), the ISR and replicas (null when unchanged), and
    whether each changed."""
    log = log_records(df, "PARTITION_RECORD", "PARTITION_CHANGE_RECORD")
    changes = log.select(
        "cluster", "topic_id", "partition_id", "offset", "time", "partition_leader_epoch",
        F.when(F.col("record_type") == "PARTITION_RECORD", "created").otherwise("changed").alias("event"),
        F.when(F.col("leader") == NO_LEADER_CHANGE, None).otherwise(F.col("leader")).alias("leader"),
        (F.col("leader") != NO_LEADER_CHANGE).alias("leader_changed"),
        "isr",
        F.col("isr").isNotNull().alias("isr_changed"),
        "replicas",
    )
    named = changes.join(topic_names(df), ["cluster", "topic_id"], "left")
    return _with_controller(named, df).select(
        "cluster", "topic_name", "topic_id", "partition_id", "event", "offset", "time", "leader",
        "leader_changed", "isr", "isr_changed", "replicas", "controller_id",
    )


def leadership_over_time(df: DataFrame, bucket: str = "1 hour") -> DataFrame:
    """Leader and ISR changes per time bucket (PartitionChangeRecords only)."""
    changes = partition_history(df).where(F.col("event") == "changed")
    return (
        changes.groupBy("cluster", F.window("time", bucket).alias("window"))
        .agg(
            F.sum(F.col("leader_changed").cast("int")).alias("leader_changes"),
            F.sum(F.col("isr_changed").cast("int")).alias("isr_changes"),
            F.countDistinct("topic_id", "partition_id").alias("partitions"),
        )
        .select("cluster", F.col("window.start").alias("start"), "leader_changes", "isr_changes", "partitions")
        .orderBy("cluster", "start")
    )


def partition_churn(df: DataFrame) -> DataFrame:
    """Per partition: how many times its leader and ISR changed."""
    changes = partition_history(df).where(F.col("event") == "changed")
    return changes.groupBy("cluster", "topic_name", "topic_id", "partition_id").agg(
        F.sum(F.col("leader_changed").cast("int")).alias("leader_changes"),
        F.sum(F.col("isr_changed").cast("int")).alias("isr_changes"),
        F.min("time").alias("first_change"),
        F.max("time").alias("last_change"),
    )


_BROKER_EVENTS = {
    "REGISTER_BROKER_RECORD": "registered",
    "UNREGISTER_BROKER_RECORD": "unregistered",
    "FENCE_BROKER_RECORD": "fenced",
    "UNFENCE_BROKER_RECORD": "unfenced",
    "BROKER_REGISTRATION_CHANGE_RECORD": "registration_changed",
}


def broker_events(df: DataFrame) -> DataFrame:
    """Broker registrations, unregistrations, fencing and unfencing.
    ``fenced`` is the fencing state after the record (null: unchanged)."""
    log = log_records(df, *_BROKER_EVENTS)
    event = F.create_map(*[x for k, v in _BROKER_EVENTS.items() for x in (F.lit(k), F.lit(v))])[F.col("record_type")]
    # A registration change that only fences/unfences reads as that event.
    event = (
        F.when((F.col("record_type") == "BROKER_REGISTRATION_CHANGE_RECORD") & (F.col("fenced") == F.lit(True)), "fenced")
        .when((F.col("record_type") == "BROKER_REGISTRATION_CHANGE_RECORD") & (F.col("fenced") == F.lit(False)), "unfenced")
        .when(
            (F.col("record_type") == "BROKER_REGISTRATION_CHANGE_RECORD") & F.col("in_controlled_shutdown"),
            "controlled_shutdown",
        )
        .otherwise(event)
    )
    events = log.select(
        "cluster", "broker_id", "broker_epoch", event.alias("event"), "fenced", "in_controlled_shutdown", "rack",
        "offset", "time", "partition_leader_epoch",
    )
    return _with_controller(events, df).select(
        "cluster", "broker_id", "event", "fenced", "in_controlled_shutdown", "broker_epoch", "rack", "offset", "time",
        "controller_id",
    )


def config_changes(df: DataFrame) -> DataFrame:
    """ConfigRecords: which config of which resource was set (or deleted: null value) when."""
    names = F.create_map(*[x for k, v in RESOURCE_TYPES.items() for x in (F.lit(k), F.lit(v))])
    log = log_records(df, "CONFIG_RECORD")
    events = log.select(
        "cluster",
        F.coalesce(names[F.col("resource_type").cast("int")], F.col("resource_type").cast("string")).alias("resource_type"),
        "resource_name",
        "config_name",
        "config_value",
        F.when(F.col("config_value").isNull(), "deleted").otherwise("set").alias("event"),
        "offset",
        "time",
        "partition_leader_epoch",
    )
    return _with_controller(events, df).select(
        "cluster", "resource_type", "resource_name", "config_name", "event", "config_value", "offset", "time",
        "controller_id",
    )


def feature_changes(df: DataFrame) -> DataFrame:
    """FeatureLevelRecords of the bootstrap checkpoints (initial levels) and the log.
    The initial levels are in ``bootstrap.checkpoint``, or (KIP-1170, Kafka
    4.4) in the zero checkpoint ``00000000000000000000-0000000000.checkpoint``."""
    zero_checkpoint = (F.col("file_kind") == "snapshot") & (F.col("snapshot_end_offset") == 0) \
        & (F.col("snapshot_epoch") == 0)
    boot = with_cluster(
        df.where(((F.col("file_kind") == "bootstrap") | zero_checkpoint)
                 & (F.col("record_type") == "FEATURE_LEVEL_RECORD"))
    ).dropDuplicates(["cluster", "feature_name", "feature_level"])
    boot = boot.select(
        "cluster", F.lit("bootstrap").alias("source"), "feature_name", "feature_level", F.lit(None).cast("long").alias("offset"),
        F.lit(None).cast("timestamp").alias("time"), F.lit(None).cast("int").alias("controller_id"),
    )
    log = log_records(df, "FEATURE_LEVEL_RECORD")
    logged = _with_controller(
        log.select("cluster", "feature_name", "feature_level", "offset", "time", "partition_leader_epoch"), df
    ).select("cluster", F.lit("log").alias("source"), "feature_name", "feature_level", "offset", "time", "controller_id")
    return boot.unionByName(logged)


def snapshots(df: DataFrame) -> DataFrame:
    """Per snapshot file: its id, records, the last log timestamp it contains,
    whether it has a header and a footer, and problems found in it."""
    snaps = with_cluster(df.where(F.col("file_kind") == "snapshot"))
    return snaps.groupBy("cluster", "log_dir", "file", "snapshot_end_offset", "snapshot_epoch").agg(
        F.sum(F.when(~F.col("is_control") & F.col("offset").isNotNull(), 1).otherwise(0)).alias("records"),
        F.max(
            F.when(
                F.col("record_type") == "SNAPSHOT_HEADER",
                F.get_json_object("payload", "$.lastContainedLogTimestamp").cast("long"),
            )
        ).alias("last_contained_log_timestamp"),
        F.max((F.col("record_type") == "SNAPSHOT_HEADER").cast("int")).cast("boolean").alias("has_header"),
        F.max((F.col("record_type") == "SNAPSHOT_FOOTER").cast("int")).cast("boolean").alias("has_footer"),
        F.sum(F.col("error_kind").isNotNull().cast("int")).alias("problems"),
    )


def snapshot_coverage(df: DataFrame) -> DataFrame:
    """Per metadata directory: the log's offset range, its snapshots, and
    whether the state can be rebuilt (the log starts at 0, or a complete
    snapshot reaches the log start)."""
    segs = with_cluster(
        df.where((F.col("file_kind") == "segment") & F.col("offset").isNotNull())
    ).groupBy("cluster", "log_dir").agg(
        F.min("offset").alias("log_start_offset"),
        (F.max("offset") + 1).alias("log_end_offset"),
        F.countDistinct("file").alias("segments"),
    )
    snaps = snapshots(df).groupBy("cluster", "log_dir").agg(
        F.count("*").alias("snapshots"),
        F.min("snapshot_end_offset").alias("earliest_snapshot"),
        F.max("snapshot_end_offset").alias("latest_snapshot"),
        F.max(F.when(F.col("has_header") & F.col("has_footer") & (F.col("problems") == 0), F.col("snapshot_end_offset"))).alias(
            "latest_complete_snapshot"
        ),
    )
    joined = segs.join(snaps, ["cluster", "log_dir"], "full_outer")
    rebuildable = (F.col("log_start_offset") == 0) | (
        F.col("latest_complete_snapshot").isNotNull()
        & (F.col("log_start_offset").isNull() | (F.col("latest_complete_snapshot") >= F.col("log_start_offset")))
    )
    return joined.select(
        "cluster", "log_dir", "segments", "log_start_offset", "log_end_offset",
        F.coalesce("snapshots", F.lit(0)).alias("snapshots"), "earliest_snapshot", "latest_snapshot",
        "latest_complete_snapshot", rebuildable.alias("rebuildable"),
    ).orderBy("cluster", "log_dir")


#: The report sections, in the order ``kraft spark report`` prints them.
#: Each takes the records DataFrame (``leadership_over_time`` also the bucket).
SECTIONS: dict[str, Callable[..., Any]] = {
    "topic_lifecycle": topic_lifecycle,
    "topic_events": topic_events,
    "leadership_over_time": leadership_over_time,
    "partition_churn": partition_churn,
    "broker_events": broker_events,
    "config_changes": config_changes,
    "feature_changes": feature_changes,
    "snapshot_coverage": snapshot_coverage,
    "problems": problems,
}
