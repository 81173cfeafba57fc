"""Topic creation through a real Kafka broker's admin API (kafka-python's
admin client: a client independent of kraft by construction): what each
attempt ended as, so a test checks that every acknowledged topic survives."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import TopicAlreadyExistsError

from tests.harness.poll import settle


@dataclass
class TopicLoad:
    """Creates topics through ``bootstrap`` (a broker) and remembers which were acknowledged."""

    bootstrap: str
    acknowledged: list[str] = field(default_factory=list)
    #: Attempts that failed or timed out: their outcome is unknown (they may exist).
    unknown: list[str] = field(default_factory=list)
    _admin: Any = None

    def admin(self) -> Any:
        if self._admin is None:
            self._admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=10_000,
                                           client_id="kraft-real-kafka-test")
        return self._admin

    def create(self, name: str, timeout_ms: int = 10_000) -> bool:
        """Create topic ``name`` (1 partition, 1 replica); whether the broker acknowledged it."""
        try:
            self.admin().create_topics([NewTopic(name, 1, 1)], timeout_ms=timeout_ms)
        except TopicAlreadyExistsError:
            pass  # an earlier attempt that timed out did commit it
        except Exception:  # noqa: BLE001 -- any failure leaves the outcome unknown, which is what is recorded
            self.unknown.append(name)
            self.close()  # a fresh client next time: its metadata may be stale
            return False
        self.acknowledged.append(name)
        return True

    def create_for(self, prefix: str, seconds: float, pause_s: float = 0.2, at_least: int = 0,
                   bound_s: float = 120.0) -> None:
        """Create ``prefix0``, ``prefix1``, ... for ``seconds``, and on until
        ``at_least`` of them were acknowledged (a loaded machine's broker may
        time out the first ones), for ``bound_s`` at most."""
        start = time.monotonic()
        n = 0

        def acknowledged() -> int:
            return sum(1 for t in self.acknowledged if t.startswith(prefix))

        while time.monotonic() - start < seconds or (acknowledged() < at_least and time.monotonic() - start < bound_s):
            self.create(f"{prefix}{n}", timeout_ms=5_000)
            n += 1
            time.sleep(pause_s)

    def first_success_within(self, name: str, timeout_s: float) -> float | None:
        """Seconds until topic ``name`` is acknowledged (retrying); None on time-out."""
        start = time.monotonic()
        if not settle(lambda: self.create(name, timeout_ms=5_000), bool, timeout_s, interval_s=0.5):
            return None
        if name in self.unknown:
            self.unknown.remove(name)
        return time.monotonic() - start

    def listed(self) -> set[str]:
        return set(self.admin().list_topics())

    def missing(self, timeout_s: float = 60.0) -> set[str]:
        """The acknowledged topics the broker does not list, once it lists
        them all or after ``timeout_s``: a broker applies the controller's
        records after the controller acknowledged them (the broker's
        metadata cache lags by a fetch)."""
        def unlisted() -> set[str]:
            try:
                return set(self.acknowledged) - self.listed()
            except Exception:  # noqa: BLE001 -- a broker between connections: ask again
                self.close()
                return set(self.acknowledged)

        return settle(unlisted, lambda missing: not missing, timeout_s, interval_s=0.5)

    def close(self) -> None:
        if self._admin is not None:
            try:
                self._admin.close()
            finally:
                self._admin = None
