"""Find generated message classes by api key, record type or name."""

from __future__ import annotations

import importlib
from functools import cache
from typing import Any

from kraft.messages import generated as _generated

__all__ = [
    "message_class",
    "request_class",
    "response_class",
    "metadata_record_class",
    "metadata_record_types",
    "CONTROL_RECORD_CLASSES",
    "CONTROL_RECORD_TYPES",
]

#: Control record types (the int16 ``type`` in a control record's key).
CONTROL_RECORD_TYPES: dict[int, str] = {
    0: "ABORT",
    1: "COMMIT",
    2: "LEADER_CHANGE",
    3: "SNAPSHOT_HEADER",
    4: "SNAPSHOT_FOOTER",
    5: "KRAFT_VERSION",
    6: "KRAFT_VOTERS",
}
_CONTROL_RECORD_SPECS = {
    2: "LeaderChangeMessage",
    3: "SnapshotHeaderRecord",
    4: "SnapshotFooterRecord",
    5: "KRaftVersionRecord",
    6: "VotersRecord",
}


@cache
def message_class(name: str) -> type[Any]:
    """The generated class for a spec name, e.g. ``"VoteRequest"``."""
    try:
        module = _generated.MODULES[name]
    except KeyError:
        raise KeyError(f"no generated message named {name!r}") from None
    return getattr(importlib.import_module(f"{_generated.__name__}.{module}"), name)


def _by_type(mtype: str, key: int) -> type[Any]:
    try:
        module = _generated.BY_TYPE[mtype][key]
    except KeyError:
        raise KeyError(f"no {mtype} with api key {key}") from None
    mod = importlib.import_module(f"{_generated.__name__}.{module}")
    for value in vars(mod).values():
        if getattr(value, "API_KEY", None) == key and getattr(value, "MESSAGE_TYPE", None) == mtype:
            return value
    raise KeyError(f"module {module} has no {mtype} class")  # pragma: no cover


@cache
def request_class(api_key: int) -> type[Any]:
    return _by_type("request", api_key)


@cache
def response_class(api_key: int) -> type[Any]:
    return _by_type("response", api_key)


@cache
def metadata_record_class(record_type: int) -> type[Any]:
    """The class of a ``__cluster_metadata`` record type id (2 -> TopicRecord)."""
    return _by_type("metadata", record_type)


def metadata_record_types() -> dict[int, str]:
    """Every known metadata record type id -> spec name."""
    return {k: metadata_record_class(k).__name__ for k in sorted(_generated.BY_TYPE.get("metadata", {}))}


class _ControlClasses(dict[int, type[Any]]):
    """Loaded on first use, so importing the registry stays cheap."""

    def __missing__(self, key: int) -> type[Any]:
        if key not in _CONTROL_RECORD_SPECS:
            raise KeyError(key)
        cls = message_class(_CONTROL_RECORD_SPECS[key])
        self[key] = cls
        return cls

    def __contains__(self, key: object) -> bool:
        return key in _CONTROL_RECORD_SPECS


CONTROL_RECORD_CLASSES: dict[int, type[Any]] = _ControlClasses()
