"""The api keys kraft speaks, under Kafka's names (``ApiKeys`` in Kafka), with
their supported version ranges taken from the generated codecs."""

from __future__ import annotations

import re
from enum import IntEnum
from functools import cached_property
from typing import Any

from kraft.messages import registry

__all__ = ["ApiKey", "lookup_api", "UnknownApiName"]


class UnknownApiName(ValueError):
    """A name or number that matches no api kraft speaks."""


class ApiKey(IntEnum):
    """Kafka's api keys for every request/response pair we have codecs for.
    The numbers are Kafka's; ``tests/wire/test_apis.py`` checks that this
    list and the generated codecs agree."""

    FETCH = 1
    METADATA = 3
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    SASL_AUTHENTICATE = 36
    CREATE_PARTITIONS = 37
    CREATE_DELEGATION_TOKEN = 38
    RENEW_DELEGATION_TOKEN = 39
    EXPIRE_DELEGATION_TOKEN = 40
    DESCRIBE_DELEGATION_TOKEN = 41
    ELECT_LEADERS = 43
    INCREMENTAL_ALTER_CONFIGS = 44
    ALTER_PARTITION_REASSIGNMENTS = 45
    LIST_PARTITION_REASSIGNMENTS = 46
    ALTER_CLIENT_QUOTAS = 49
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS = 51
    VOTE = 52
    BEGIN_QUORUM_EPOCH = 53
    END_QUORUM_EPOCH = 54
    DESCRIBE_QUORUM = 55
    ALTER_PARTITION = 56
    UPDATE_FEATURES = 57
    ENVELOPE = 58
    FETCH_SNAPSHOT = 59
    DESCRIBE_CLUSTER = 60
    BROKER_REGISTRATION = 62
    BROKER_HEARTBEAT = 63
    UNREGISTER_BROKER = 64
    ALLOCATE_PRODUCER_IDS = 67
    CONTROLLER_REGISTRATION = 70
    ASSIGN_REPLICAS_TO_DIRS = 73
    ADD_RAFT_VOTER = 80
    REMOVE_RAFT_VOTER = 81
    UPDATE_RAFT_VOTER = 82
    UNREGISTER_CONTROLLER = 94

    @cached_property
    def request_class(self) -> type[Any]:
        return registry.request_class(self.value)

    @cached_property
    def response_class(self) -> type[Any]:
        return registry.response_class(self.value)

    @property
    def min_version(self) -> int:
        return int(self.request_class.LOWEST_VERSION)

    @property
    def max_version(self) -> int:
        return int(self.request_class.HIGHEST_VERSION)

    def is_version_supported(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version

    def is_flexible(self, version: int) -> bool:
        """Whether ``version`` uses compact types and tagged fields. Also
        answers for versions past the supported range (Kafka's header
        rules extrapolate the same way: flexible from some version on)."""
        flexible_from = self.request_class.FLEXIBLE_FROM
        return flexible_from is not None and version >= flexible_from

    @property
    def display_name(self) -> str:
        """CamelCase as in Kafka's message names: ``DescribeQuorum``."""
        return self.request_class.__name__.removesuffix("Request")


def _normalise(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _by_normalised_name() -> dict[str, ApiKey]:
    table: dict[str, ApiKey] = {}
    for api in ApiKey:
        table[_normalise(api.name)] = api
    return table


_BY_NAME = _by_normalised_name()


def lookup_api(name_or_key: str | int) -> ApiKey:
    """The api for ``52``, ``"52"``, ``"VOTE"``, ``"Vote"``, ``"VoteRequest"``,
    ``"vote-response"``, ``"describe_quorum"``, ...: case, ``_``/``-`` and a
    ``Request``/``Response`` suffix do not matter."""
    if isinstance(name_or_key, int) or (isinstance(name_or_key, str) and name_or_key.strip().lstrip("-").isdigit()):
        key = int(name_or_key)
        try:
            return ApiKey(key)
        except ValueError:
            raise UnknownApiName(f"unknown api key {key} (known: {_known()})") from None
    text = _normalise(name_or_key)
    for suffix in ("request", "response"):
        if text.endswith(suffix) and text[: -len(suffix)] in _BY_NAME:
            text = text[: -len(suffix)]
            break
    try:
        return _BY_NAME[text]
    except KeyError:
        raise UnknownApiName(f"unknown api {name_or_key!r} (known: {_known()})") from None


def _known() -> str:
    return ", ".join(f"{a.name}={a.value}" for a in ApiKey)
