"""The tools' structured output (``--json``), derived from a model's fields:
``kraft quorum describe --json`` prints DescribeQuorum's model
(:class:`~kraft.raft.rpcs.describe_quorum_rpc.QuorumInfo`), ``kraft features
describe --json`` ApiVersions' (:class:`~kraft.raft.rpcs.api_versions_rpc.FeatureMetadata`).
Every dataclass field is printed under its own name, so a field added to
an RPC unit's model shows up here without touching the tool; a field
declared with ``repr=False`` is the process's own (not the answer's) and is
left out. Kafka's text formats are the tools' own (byte for byte), never
derived.

Values: nested dataclasses as objects, tuples and lists as arrays, mapping
keys as strings, uuids in Kafka's base64 form (as every kraft tool prints
them), enums by name.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import uuid
from collections.abc import Mapping
from typing import Any

__all__ = ["plain", "as_json"]


def plain(value: Any) -> Any:
    """``value`` as JSON's types, field by field."""
    from kraft.messages.json_form import uuid_to_kafka

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value) if f.repr}
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, uuid.UUID):
        return uuid_to_kafka(value)
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [plain(v) for v in value]
    return value


def as_json(document: Mapping[str, Any]) -> str:
    """One JSON document (indented, one trailing newline) of ``document``'s values, each :func:`plain`."""
    return json.dumps({k: plain(v) for k, v in document.items()}, indent=2) + "\n"
