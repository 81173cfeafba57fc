"""Kafka's raft metrics (``kafka.server:type=raft-metrics``), kept by the
trio raft driver and the node, exported in the Prometheus text format.

The raft core stays sans-IO: everything here is observed from outside it --
the ``Ready`` values the raft driver executes (role changes, appends, the high
watermark), the requests the node answers and sends, and the state the core
exposes, read when Prometheus scrapes (Kafka's gauges are read the same way,
when JMX asks).

Names. Prometheus' JMX exporter, with the rules of its Kafka example
configuration, turns the MBean attribute ``kafka.server:type=raft-metrics``
``current-leader`` into ``kafka_server_raft_metrics_current_leader``, and
``kafka.network:type=RequestMetrics,name=ErrorsPerSec,request=Fetch,error=NONE``
into ``kafka_network_requestmetrics_errors_total{request="Fetch",error="NONE"}``.
kraft exports the same names with one prefix swapped, so a dashboard only
needs its job renamed (and its prefix, if it spells it out):

* ``kafka_server_raft_metrics_<attr>`` -> ``kafka_raft_<attr>``
* ``kafka_server_raft_channel_metrics_<attr>`` -> ``kafka_raft_channel_<attr>``
* ``kafka_network_requestmetrics_<name>`` -> ``kafka_raft_<name>``

with ``-`` -> ``_`` in the attribute, as the exporter does. Differences,
each because Prometheus has a better native form:

* ``current-state`` is a string, which the JMX exporter drops; it is the
  state set ``kafka_raft_current_state{state="leader"} 1`` (0 for every
  other state). The states are Kafka 4.x's (``KafkaRaftMetrics``): a
  resigned leader reports ``unattached``, as Kafka's does.
* Kafka's ``TotalTimeMs`` is a Yammer histogram the exporter turns into
  quantile gauges; ``kafka_raft_totaltimems`` is a Prometheus histogram
  (``_bucket``/``_sum``/``_count``; ``_count`` is the same as Kafka's).
* The channel counters carry a ``request`` label (and the responses an
  ``error`` label), Kafka's only a client id: ``sum`` gives Kafka's value.
* ``current-vote-directory-id`` (a string) is not exported.

Windowed statistics (``*-avg``, ``*-max``, ``*-rate``) follow Kafka's
defaults: two samples of 30 s (``metrics.num.samples``,
``metrics.sample.window.ms``); an average or maximum with no sample in the
window is NaN, as in Kafka.
"""

from __future__ import annotations

import functools
import math
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from prometheus_client.core import CollectorRegistry, CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client import PlatformCollector, ProcessCollector
from prometheus_client.registry import Collector

from kraft.raft.errors import Errors
from kraft.raft.roles import Candidate, Follower, Leader, Prospective, Unattached

if TYPE_CHECKING:
    from kraft.raft.core import RoleChange
    from kraft.node.raft_view import RaftView

__all__ = [
    "METRICS",
    "CURRENT_STATES",
    "MetricSpec",
    "RaftMetrics",
    "current_state",
    "error_name",
    "request_name",
    "wire_error",
]

#: Kafka's metric sample window and count (``metrics.sample.window.ms``,
#: ``metrics.num.samples``).
SAMPLE_WINDOW_MS = 30_000
NUM_SAMPLES = 2

#: Buckets of ``kafka_raft_totaltimems``, in ms (a Fetch waits up to
#: ``fetch.max.wait.ms``, 500 by default, when there is nothing new).
TIME_BUCKETS_MS = (1.0, 2.0, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0, 10000.0)

#: The values of ``current-state``: Kafka 4.x's ``KafkaRaftMetrics`` set, and
#: (kraft) ``witness``: a voter beside Kafka controllers that never leads
#: but to hand the log over, which it reports as ``witness-handover``.
CURRENT_STATES = (
    "leader", "prospective", "prospective-voted", "candidate", "unattached-voted", "follower", "observer", "unattached",
    "witness", "witness-handover",
)


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """One exported metric family: its Prometheus name, type, help, labels."""

    name: str
    type: str  # gauge, counter, histogram
    help: str
    labels: tuple[str, ...] = ()


def _spec(name: str, type_: str, help_: str, *labels: str) -> MetricSpec:
    return MetricSpec(name, type_, help_, labels)


#: Every metric family kraft exports, in the order of the table in docs/operating/metrics-and-logs.md.
#: Help texts are Kafka's where Kafka has the metric.
METRICS: tuple[MetricSpec, ...] = (
    _spec("kafka_raft_current_state", "gauge",
          "The current state of this member; possible values are leader, prospective, prospective-voted, "
          "candidate, unattached-voted, follower, observer, unattached, and (kraft) witness: a voter beside Kafka "
          "controllers that leads only to hand the log over (witness-handover while it does; 1 for the current "
          "state, 0 for the others)", "state"),
    _spec("kafka_raft_current_leader", "gauge", "The current quorum leader's id; -1 indicates unknown"),
    _spec("kafka_raft_witness_handover_epochs", "gauge",
          "(kraft) Hand-over epochs this witness led since it started: epochs it led only to bring a voter that "
          "may lead up to date, then resigned in that voter's favour"),
    _spec("kafka_raft_witness_handover_time_ms", "gauge",
          "(kraft) Total time in milliseconds this witness spent leading hand-over epochs since it started"),
    _spec("kafka_raft_current_vote", "gauge", "The current voted id; -1 indicates not voted for anyone"),
    _spec("kafka_raft_current_epoch", "gauge", "The current quorum epoch."),
    _spec("kafka_raft_high_watermark", "gauge", "The high watermark maintained on this member; -1 if it is unknown"),
    _spec("kafka_raft_log_end_offset", "gauge", "The current raft log end offset."),
    _spec("kafka_raft_log_end_epoch", "gauge", "The current raft log end epoch."),
    _spec("kafka_raft_number_unknown_voter_connections", "gauge",
          "Number of unknown voters whose connection information is not cached; would never be larger than "
          "quorum-size."),
    _spec("kafka_raft_number_of_voters", "gauge", "Number of voters for a KRaft topic partition."),
    _spec("kafka_raft_number_of_observers", "gauge",
          "Number of observers being tracked by the KRaft topic partition leader."),
    _spec("kafka_raft_uncommitted_voter_change", "gauge",
          "1 if there is a voter change that has not been committed, 0 otherwise."),
    _spec("kafka_raft_commit_latency_avg", "gauge",
          "The average time in milliseconds to commit an entry in the raft log."),
    _spec("kafka_raft_commit_latency_max", "gauge",
          "The maximum time in milliseconds to commit an entry in the raft log."),
    _spec("kafka_raft_election_latency_avg", "gauge",
          "The average time in milliseconds spent on electing a new leader."),
    _spec("kafka_raft_election_latency_max", "gauge",
          "The maximum time in milliseconds spent on electing a new leader."),
    _spec("kafka_raft_fetch_records_rate", "gauge",
          "The average number of records fetched from the leader of the raft quorum."),
    _spec("kafka_raft_append_records_rate", "gauge",
          "The average number of records appended per sec as the leader of the raft quorum."),
    _spec("kafka_raft_poll_idle_ratio_avg", "gauge",
          "The ratio of time the Raft IO thread is idle as opposed to doing work (e.g. handling requests or "
          "replicating from the leader)"),
    _spec("kafka_raft_requests", "counter",
          "Requests this node received, by RPC (Kafka's RequestMetrics RequestsPerSec).", "request"),
    _spec("kafka_raft_errors", "counter",
          "Responses this node sent, by RPC and error code, NONE included (Kafka's RequestMetrics "
          "ErrorsPerSec).", "request", "error"),
    _spec("kafka_raft_totaltimems", "histogram",
          "Time in milliseconds from receiving a request to having its response (Kafka's RequestMetrics "
          "TotalTimeMs).", "request"),
    _spec("kafka_raft_channel_request", "counter",
          "Requests this node sent to other replicas, by RPC (Kafka's raft-channel-metrics request-total).",
          "request"),
    _spec("kafka_raft_channel_response", "counter",
          "Responses this node received to its requests, by RPC and error code; a failed connection counts "
          "as BROKER_NOT_AVAILABLE and a timeout as REQUEST_TIMED_OUT, as Kafka's raft network channel "
          "completes them (Kafka's raft-channel-metrics response-total).", "request", "error"),
)

_SPECS = {s.name: s for s in METRICS}


@functools.cache
def request_name(api_key_name: str) -> str:
    """Kafka's request name for an ApiKey member name: ``BEGIN_QUORUM_EPOCH``
    -> ``BeginQuorumEpoch`` (the ``request`` tag of RequestMetrics)."""
    return "".join(part.capitalize() for part in api_key_name.split("_"))


def current_state(role: Any, is_voter: bool, witness: bool = False, handover: bool = False) -> str:
    """Kafka 4.x's ``current-state`` value for a role, checked in
    ``KafkaRaftMetrics.initialize``'s order (see :data:`CURRENT_STATES`); a
    Resigned leader is none of Kafka's named states: ``unattached``.
    ``witness`` (kraft): a witness voter that follows, waits or voted
    (kraft/raft/witness_policy.py) reports ``witness`` instead, and
    ``witness-handover`` while it leads a hand-over epoch (kraft/raft/handover.py)."""
    if handover and isinstance(role, Leader):
        return "witness-handover"
    if witness and is_voter and isinstance(role, (Follower, Unattached)):
        return "witness"
    match role:
        case Leader():
            return "leader"
        case Prospective(voted_key=voted):
            return "prospective" if voted is None else "prospective-voted"
        case Candidate():
            return "candidate"
        case Unattached(voted_key=voted) if voted is not None:
            return "unattached-voted"
        case Follower():
            # An observer is a follower that is not a voter (a broker, in Kafka).
            return "follower" if is_voter else "observer"
    return "unattached"


def _now_ms() -> float:
    return time.monotonic() * 1000.0


class _Sampled:
    """Kafka's SampledStat: ``NUM_SAMPLES`` samples of ``SAMPLE_WINDOW_MS``;
    a sample older than the whole window is forgotten."""

    __slots__ = ("_samples", "_clock")

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        # [window start ms, count, sum, max]
        self._samples: deque[list[float]] = deque(maxlen=NUM_SAMPLES)

    def record(self, value: float) -> None:
        now = self._clock()
        samples = self._samples
        if not samples or now - samples[-1][0] >= SAMPLE_WINDOW_MS:
            samples.append([now, 1.0, value, value])
            return
        s = samples[-1]
        s[1] += 1
        s[2] += value
        if value > s[3]:
            s[3] = value

    def _live(self, now: float) -> list[list[float]]:
        return [s for s in self._samples if now - s[0] < NUM_SAMPLES * SAMPLE_WINDOW_MS]

    def avg(self) -> float:
        live = self._live(self._clock())
        count = sum(s[1] for s in live)
        return sum(s[2] for s in live) / count if count else math.nan

    def max(self) -> float:
        live = self._live(self._clock())
        return max(s[3] for s in live) if live else math.nan

    def rate_per_s(self) -> float:
        """Kafka's ``Rate(WindowedSum)``: the sum over the window divided by
        the elapsed time, at least ``NUM_SAMPLES - 1`` full windows."""
        now = self._clock()
        live = self._live(now)
        if not live:
            return 0.0
        elapsed = now - live[0][0]
        elapsed = max(elapsed, (NUM_SAMPLES - 1) * SAMPLE_WINDOW_MS)
        return sum(s[2] for s in live) / (elapsed / 1000.0)


class _Histogram:
    __slots__ = ("buckets", "sum")

    def __init__(self) -> None:
        self.buckets = [0] * (len(TIME_BUCKETS_MS) + 1)
        self.sum = 0.0

    def observe(self, value_ms: float) -> None:
        self.sum += value_ms
        for i, bound in enumerate(TIME_BUCKETS_MS):
            if value_ms <= bound:
                self.buckets[i] += 1
                return
        self.buckets[-1] += 1

    def cumulative(self) -> list[tuple[str, float]]:
        out, total = [], 0
        for bound, n in zip((*(repr(b) for b in TIME_BUCKETS_MS), "+Inf"), self.buckets):
            total += n
            out.append((bound, float(total)))
        return out


class RaftMetrics:
    """The metrics of one node. Every method runs on the trio thread (the
    raft driver's task or a request handler), so plain counters suffice; a scrape
    (:meth:`collect`, from the HTTP task) reads them on the same thread."""

    def __init__(self, clock: Callable[[], float] = _now_ms) -> None:
        self._clock = clock
        self.raft_driver: RaftView | None = None
        #: Whether this voter is a witness (kraft/node/witness_detector.py), set by the node.
        self.is_witness: Callable[[], bool] = lambda: False
        self._commit = _Sampled(clock)
        self._election = _Sampled(clock)
        self._fetch_records = _Sampled(clock)
        self._append_records = _Sampled(clock)
        self._idle_ratio = _Sampled(clock)
        self._idle_since: float | None = None
        self._last_idle_end: float | None = None
        self._election_start: float | None = None
        #: Leader batches not yet committed: (last offset, append time in the
        #: raft driver's clock, wall ms).
        self._uncommitted: deque[tuple[int, int]] = deque()
        self.requests: dict[str, int] = {}
        self.errors: dict[tuple[str, str], int] = {}
        self.request_time: dict[str, _Histogram] = {}
        self.sent: dict[str, int] = {}
        self.responses: dict[tuple[str, str], int] = {}
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(_Collector(self))
        # Beside the raft metrics, what every Prometheus target exports:
        # process_* (CPU, memory, open files, start time), python_info, and
        # kraft_build_info / kraft_uptime_seconds.
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        self.registry.register(_ProcessInfo())

    # ------------------------------------------------------------ raft driver hooks

    def idle_start(self) -> None:
        """The raft driver starts waiting for work (Kafka's ``updatePollStart``)."""
        self._idle_since = self._clock()

    def idle_end(self) -> None:
        """The wait ended. Kafka's TimeRatio: the idle time over the time
        since the previous wait ended."""
        since = self._idle_since
        if since is None:
            return
        now = self._clock()
        self._idle_since = None
        last = self._last_idle_end
        self._last_idle_end = now
        if last is None:
            return
        interval = now - last
        self._idle_ratio.record(1.0 if interval <= 0 else min(1.0, (now - since) / interval))

    def role_changed(self, change: RoleChange) -> None:
        """Election latency: from the first Prospective/Candidate to the next
        Leader or Follower (Kafka's ``updateElectionStartMs`` /
        ``maybeUpdateElectionLatency``)."""
        if change.role in ("Prospective", "Candidate"):
            if self._election_start is None:
                self._election_start = self._clock()
        elif change.role in ("Leader", "Follower"):
            if self._election_start is not None:
                self._election.record(self._clock() - self._election_start)
                self._election_start = None
        if change.previous == "Leader":
            self._uncommitted.clear()

    def appended_as_leader(self, records: int, last_offset: int, append_time_ms: int) -> None:
        self._append_records.record(records)
        self._uncommitted.append((last_offset, append_time_ms))

    def fetched(self, records: int) -> None:
        self._fetch_records.record(records)

    def committed(self, high_watermark: int, now_wall_ms: int) -> None:
        """Commit latency of the leader's batches below the new high watermark
        (Kafka records it when the batch's append completes)."""
        pending = self._uncommitted
        while pending and pending[0][0] < high_watermark:
            _, appended = pending.popleft()
            self._commit.record(max(0, now_wall_ms - appended))

    # ------------------------------------------------------------ node hooks

    def request_handled(self, request: str, error: str, elapsed_ms: float) -> None:
        self.requests[request] = self.requests.get(request, 0) + 1
        key = (request, error)
        self.errors[key] = self.errors.get(key, 0) + 1
        histogram = self.request_time.get(request)
        if histogram is None:
            histogram = self.request_time[request] = _Histogram()
        histogram.observe(elapsed_ms)

    def request_sent(self, request: str) -> None:
        self.sent[request] = self.sent.get(request, 0) + 1

    def response_received(self, request: str, error: str) -> None:
        key = (request, error)
        self.responses[key] = self.responses.get(key, 0) + 1

    # ------------------------------------------------------------ reading

    def snapshot(self) -> dict[str, Any]:
        """The raft-metrics gauges by Kafka name (``current-state`` a string;
        leader-only ones absent elsewhere): what ``kraft node status`` shows."""
        out: dict[str, Any] = {}
        raft_driver = self.raft_driver
        if raft_driver is not None and raft_driver.initialized:
            core = raft_driver.core
            role = core.role
            is_voter = core.is_voter
            out["current-state"] = current_state(role, is_voter, self.is_witness(),
                                                 core.handover_leadership is not None)
            handovers = core.handover_stats
            out["witness-handover-epochs"] = handovers.epochs
            out["witness-handover-time-ms"] = handovers.total_ms
            out["current-leader"] = -1 if core.leader_id is None else core.leader_id
            out["current-vote"] = _current_vote(core)
            out["current-epoch"] = core.epoch
            hwm = core.high_watermark
            out["high-watermark"] = -1 if hwm is None else hwm
            out["log-end-offset"] = raft_driver.log.end_offset
            out["log-end-epoch"] = raft_driver.log.last_epoch
            out["number-unknown-voter-connections"] = 0
            out["number-of-voters"] = len(core.voters.voter_ids)
            if isinstance(role, Leader):
                out["number-of-observers"] = len(role.progress.observers)
                out["uncommitted-voter-change"] = 0 if core.pending_voter_change is None else 1
        out["commit-latency-avg"] = self._commit.avg()
        out["commit-latency-max"] = self._commit.max()
        out["election-latency-avg"] = self._election.avg()
        out["election-latency-max"] = self._election.max()
        out["fetch-records-rate"] = self._fetch_records.rate_per_s()
        out["append-records-rate"] = self._append_records.rate_per_s()
        out["poll-idle-ratio-avg"] = self._idle_ratio.avg()
        return out


def _current_vote(core: Any) -> int:
    """Kafka's ``current-vote``: a leader or candidate reports itself, an
    unattached (or prospective) voter the candidate it voted for; -1 otherwise."""
    role = core.role
    if isinstance(role, (Leader, Candidate)):
        return core.local_id
    if isinstance(role, (Unattached, Prospective)) and role.voted_key is not None:
        return role.voted_key.id
    return -1


_STARTED = time.monotonic()


class _ProcessInfo(Collector):
    """``kraft_build_info`` (1, labelled with the version) and
    ``kraft_uptime_seconds``."""

    def collect(self) -> Iterator[Any]:
        from importlib.metadata import PackageNotFoundError, version

        try:
            kraft_version = version("kraft")
        except PackageNotFoundError:  # pragma: no cover - running from a source tree
            kraft_version = "unknown"
        info = GaugeMetricFamily("kraft_build_info", "kraft's version (always 1).", labels=["version"])
        info.add_metric([kraft_version], 1.0)
        yield info
        uptime = GaugeMetricFamily("kraft_uptime_seconds", "Seconds since this process started.")
        uptime.add_metric([], time.monotonic() - _STARTED)
        yield uptime


class _Collector(Collector):
    """Builds the metric families at scrape time (every family is always
    declared, so the set of names does not depend on the role)."""

    def __init__(self, metrics: RaftMetrics) -> None:
        self.m = metrics

    def collect(self) -> Iterator[Any]:
        values = self.m.snapshot()
        for spec in METRICS:
            if spec.type == "gauge":
                yield self._gauge(spec, values)
        yield from self._requests()

    def _gauge(self, spec: MetricSpec, values: dict[str, Any]) -> GaugeMetricFamily:
        family = GaugeMetricFamily(spec.name, spec.help, labels=spec.labels)
        kafka_name = spec.name.removeprefix("kafka_raft_").replace("_", "-")
        value = values.get(kafka_name)
        if spec.name == "kafka_raft_current_state":
            if value is not None:
                for state in CURRENT_STATES:
                    family.add_metric([state], 1.0 if state == value else 0.0)
        elif value is not None:
            family.add_metric([], float(value))
        return family

    def _requests(self) -> Iterable[Any]:
        m = self.m

        def counter(name: str, items: Iterable[tuple[Any, int]]) -> CounterMetricFamily:
            spec = _SPECS[name]
            family = CounterMetricFamily(spec.name, spec.help, labels=spec.labels)
            for key, n in sorted(items):
                family.add_metric(list(key) if isinstance(key, tuple) else [key], float(n))
            return family

        yield counter("kafka_raft_requests", m.requests.items())
        yield counter("kafka_raft_errors", m.errors.items())
        spec = _SPECS["kafka_raft_totaltimems"]
        histogram = HistogramMetricFamily(spec.name, spec.help, labels=spec.labels)
        for request, h in sorted(m.request_time.items()):
            histogram.add_metric([request], h.cumulative(), sum_value=h.sum)
        yield histogram
        yield counter("kafka_raft_channel_request", m.sent.items())
        yield counter("kafka_raft_channel_response", m.responses.items())


@functools.cache
def error_name(code: int) -> str:
    """Kafka's name of an error code (the ``error`` tag of ErrorsPerSec)."""
    try:
        return Errors(code).name
    except ValueError:
        return str(code)


#: Where the KRaft responses keep their one partition: ``topics[0]`` or
#: ``responses[0]`` (Fetch), then ``partitions[0]``.
_NESTED = ("topics", "responses", "partitions")


def wire_error(body: Any, depth: int = 2) -> int:
    """The error code a response reports: its top-level ``error_code`` or,
    if that is NONE, its first partition's (a KRaft RPC answers one
    partition, whose error is the one that matters)."""
    code = getattr(body, "error_code", 0)
    if code or depth == 0:
        return code
    for name in _NESTED:
        value = getattr(body, name, None)
        if value:
            return wire_error(value[0], depth - 1)
    return 0
