"""The small state files Kafka keeps beside the metadata log, byte-compatible
with Kafka's readers and writers:

- ``quorum-state`` (``FileQuorumStateStore``): the ``QuorumStateData`` JSON
  form plus ``data_version``; version 0 (static quorum) or 1 (kraft.version 1).
- ``meta.properties`` (``MetaProperties``): a Java properties file in every log
  directory; version 1 carries ``cluster.id``, ``node.id``, ``directory.id``.
- ``partition.metadata`` (``PartitionMetadataFile``): ``version: 0`` and the
  topic id (``AAAAAAAAAAAAAAAAAAAAAQ`` for ``__cluster_metadata``).

All writes go through temp file + fsync + atomic rename.
"""

from __future__ import annotations

import base64
import json
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from kraft.records.errors import StateFileError
from kraft.records.fileutil import atomic_write

QUORUM_STATE_FILE = "quorum-state"
META_PROPERTIES_FILE = "meta.properties"
PARTITION_METADATA_FILE = "partition.metadata"
CLUSTER_METADATA_DIR = "__cluster_metadata-0"

ZERO_UUID = uuid.UUID(int=0)
#: Kafka's ``Uuid.METADATA_TOPIC_ID``.
METADATA_TOPIC_ID = uuid.UUID(int=1)
NOT_VOTED = -1
UNKNOWN_LEADER_ID = -1


def uuid_to_kafka(u: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString()``: url-safe base64 without padding."""
    return base64.urlsafe_b64encode(u.bytes).rstrip(b"=").decode("ascii")


def uuid_from_kafka(text: str) -> uuid.UUID:
    """Parse Kafka's ``Uuid`` string form; raises ValueError."""
    if not isinstance(text, str) or len(text) != 22:
        raise ValueError(f"not a Kafka uuid: {text!r}")
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except (ValueError, TypeError):
        raise ValueError(f"not a Kafka uuid: {text!r}") from None
    if len(raw) != 16:
        raise ValueError(f"not a Kafka uuid: {text!r}")
    return uuid.UUID(bytes=raw)


def read_json_state_file(path: Path) -> Any | None:
    """A small JSON state file kraft keeps beside Kafka's (None when it is
    absent); :class:`StateFileError` naming it when it cannot be read or is
    not JSON."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as e:
        raise StateFileError(str(path), f"cannot be read ({e})") from None
    try:
        return json.loads(text)
    except ValueError as e:
        raise StateFileError(str(path), f"not JSON ({e})") from None


class _PerVoter(Protocol):
    @property
    def voter_id(self) -> int: ...


_E = TypeVar("_E", bound=_PerVoter)


def read_voter_list_file(path: Path, list_key: str, entry: Callable[[str, Any], _E]) -> tuple[_E, ...]:
    """A kraft state file of the shape ``{"version": 0, list_key: [...]}``
    holding one entry per voter id (none when the file is absent): each
    element made by ``entry(path, element)``; :class:`StateFileError` naming
    the file when it cannot be read, is malformed or lists a voter twice."""
    data = read_json_state_file(path)
    if data is None:
        return ()
    if not isinstance(data, dict) or data.get("version") != 0 or not isinstance(data.get(list_key), list):
        raise StateFileError(str(path), f'expected {{"version": 0, "{list_key}": [...]}}')
    entries = tuple(entry(str(path), raw) for raw in data[list_key])
    if len({e.voter_id for e in entries}) != len(entries):
        raise StateFileError(str(path), "a voter id is listed twice")
    return entries


def random_kafka_uuid() -> uuid.UUID:
    """Kafka's ``Uuid.randomUuid()``: never the zero or metadata-topic uuid and
    never one whose string form starts with ``-`` (it would read as a flag)."""
    while True:
        u = uuid.uuid4()
        if u not in (ZERO_UUID, METADATA_TOPIC_ID) and not uuid_to_kafka(u).startswith("-"):
            return u


def random_cluster_id() -> str:
    """A new cluster id as ``kafka-storage random-uuid`` prints it
    (:func:`random_kafka_uuid`: never starting with ``-``, which the storage
    tools' parsers would take for an option)."""
    return uuid_to_kafka(random_kafka_uuid())


# --- quorum-state -------------------------------------------------------------------


@dataclass(frozen=True)
class QuorumStateFileData:
    """The election state persisted in ``quorum-state``.

    ``data_version`` 0 carries ``cluster_id``, ``applied_offset`` and
    ``current_voters`` (static quorum); 1 carries ``voted_directory_id``.
    """

    leader_id: int = UNKNOWN_LEADER_ID
    leader_epoch: int = -1
    voted_id: int = NOT_VOTED
    voted_directory_id: uuid.UUID = ZERO_UUID
    current_voters: tuple[int, ...] | None = ()
    cluster_id: str = ""
    applied_offset: int = 0
    data_version: int = 1

    def to_json(self) -> str:
        """Compact JSON, field order of Kafka's ``QuorumStateDataJsonConverter``."""
        node: dict[str, Any] = {}
        if self.data_version == 0:
            node["clusterId"] = self.cluster_id
        node["leaderId"] = self.leader_id
        node["leaderEpoch"] = self.leader_epoch
        node["votedId"] = self.voted_id
        if self.data_version >= 1:
            node["votedDirectoryId"] = uuid_to_kafka(self.voted_directory_id)
        if self.data_version == 0:
            node["appliedOffset"] = self.applied_offset
            node["currentVoters"] = (
                None if self.current_voters is None else [{"voterId": v} for v in self.current_voters]
            )
        node["data_version"] = self.data_version
        return json.dumps(node, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str, path: str = QUORUM_STATE_FILE) -> QuorumStateFileData:
        try:
            node = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise StateFileError(path, f"not valid JSON: {exc}") from None
        if not isinstance(node, dict):
            raise StateFileError(path, "not a JSON object")
        if "data_version" not in node:
            raise StateFileError(path, "Failed to find data_version")
        version = _int_field(node, "data_version", path)
        if version not in (0, 1):
            raise StateFileError(path, f"unsupported data_version {version}")

        def required_int(name: str) -> int:
            if name not in node:
                raise StateFileError(path, f"missing mandatory field {name!r} for data_version {version}")
            return _int_field(node, name, path)

        leader_id = required_int("leaderId")
        leader_epoch = required_int("leaderEpoch")
        voted_id = required_int("votedId")
        if version == 0:
            cluster_id = node.get("clusterId", "")
            if cluster_id is not None and not isinstance(cluster_id, str):
                raise StateFileError(path, "clusterId must be a string")
            voters_node = node.get("currentVoters", [])
            if voters_node is None:
                voters: tuple[int, ...] | None = None
            elif isinstance(voters_node, list):
                voters = tuple(_int_field(v, "voterId", path) if isinstance(v, dict) else _bad(path, "voter") for v in voters_node)
            else:
                raise StateFileError(path, "currentVoters must be an array")
            applied = _int_field(node, "appliedOffset", path) if "appliedOffset" in node else 0
            return cls(leader_id, leader_epoch, voted_id, ZERO_UUID, voters, cluster_id or "", applied, 0)
        directory = node.get("votedDirectoryId", uuid_to_kafka(ZERO_UUID))
        try:
            voted_directory_id = uuid_from_kafka(directory)
        except ValueError as exc:
            raise StateFileError(path, str(exc)) from None
        return cls(leader_id, leader_epoch, voted_id, voted_directory_id, (), "", 0, 1)


def _int_field(node: dict[str, Any], name: str, path: str) -> int:
    value = node.get(name)
    if isinstance(value, bool) or not isinstance(value, int):
        raise StateFileError(path, f"field {name!r} must be an integer, got {value!r}")
    return value


def _bad(path: str, what: str) -> int:
    raise StateFileError(path, f"malformed {what} entry")


class QuorumStateFile:
    """Reads and durably writes ``<metadata log dir>/__cluster_metadata-0/quorum-state``."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def read(self) -> QuorumStateFileData | None:
        """The stored state, or ``None`` when the file does not exist."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except UnicodeDecodeError:
            raise StateFileError(str(self.path), "not UTF-8 text") from None
        return QuorumStateFileData.from_json(text, str(self.path))

    def write(self, state: QuorumStateFileData) -> None:
        """Temp file + fsync + atomic rename: a crash leaves the old or the new
        state (and a full disk refusing the temporary file leaves the old one)."""
        atomic_write(self.path, state.to_json().encode("utf-8"), standalone=True)

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)


# --- Java properties ----------------------------------------------------------------


#: ``java.util.Properties``: a line ends at ``\n``, ``\r`` or ``\r\n`` only
#: (``str.splitlines`` would also split at ``\x85``, ``\x0b``, ``\x1c``..., which
#: a Latin-1 file may hold inside a value), and whitespace is space, tab, form feed.
_LINE_END = re.compile(r"\r\n|\r|\n")
_WHITESPACE = " \t\f"


class PropertiesSyntaxError(ValueError):
    """What ``Properties.load`` throws on: a malformed ``\\uXXXX`` escape."""


def parse_java_properties(text: str) -> dict[str, str]:
    """Java ``Properties.load``: ``key=value`` / ``key: value`` / ``key value``
    lines, ``#``/``!`` comments, backslash continuations and escapes
    (``Properties.LineReader`` and ``Properties.loadConvert``). A malformed
    ``\\uXXXX`` raises :class:`PropertiesSyntaxError` with Java's message."""
    props: dict[str, str] = {}
    lines = _LINE_END.split(text)
    i = 0
    while i < len(lines):
        line = lines[i].lstrip(_WHITESPACE)
        i += 1
        if not line or line[0] in "#!":
            continue
        # Join continuation lines (an odd number of trailing backslashes).
        while _ends_with_continuation(line) and i < len(lines):
            line = line[:-1] + lines[i].lstrip(_WHITESPACE)
            i += 1
        if _ends_with_continuation(line):
            line = line[:-1]
        key_chars: list[str] = []
        j = 0
        while j < len(line):
            c = line[j]
            if c == "\\" and j + 1 < len(line):
                key_chars.append(line[j : j + 2])
                j += 2
                continue
            if c in "=:" or c in _WHITESPACE:
                break
            key_chars.append(c)
            j += 1
        # Skip whitespace, one separator, whitespace.
        while j < len(line) and line[j] in _WHITESPACE:
            j += 1
        if j < len(line) and line[j] in "=:":
            j += 1
        while j < len(line) and line[j] in _WHITESPACE:
            j += 1
        props[_unescape("".join(key_chars))] = _unescape(line[j:])
    return props


def _ends_with_continuation(line: str) -> bool:
    n = len(line) - len(line.rstrip("\\"))
    return n % 2 == 1


def _unescape(s: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            n = s[i + 1]
            if n == "u":
                digits = s[i + 2 : i + 6]
                if len(digits) != 4 or any(d not in "0123456789abcdefABCDEF" for d in digits):
                    raise PropertiesSyntaxError("Malformed \\uxxxx encoding.")
                out.append(chr(int(digits, 16)))
                i += 6
                continue
            out.append({"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(n, n))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _escape(s: str, is_key: bool) -> str:
    out: list[str] = []
    for i, c in enumerate(s):
        if c == " " and (i == 0 or is_key):
            out.append("\\ ")
        elif c in "\\":
            out.append("\\\\")
        elif c in "=:#!":
            out.append("\\" + c)
        elif c in "\t\n\r\f":
            out.append({"\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}[c])
        elif ord(c) < 0x20 or ord(c) > 0x7E:
            out.append(f"\\u{ord(c):04X}")
        else:
            out.append(c)
    return "".join(out)


def format_java_properties(props: dict[str, str], *, now: float | None = None) -> str:
    """``Properties.store(writer, "")`` output: an empty comment line, the date
    line, then ``key=value`` lines (sorted, for stable files)."""
    stamp = time.strftime("%a %b %d %H:%M:%S %Z %Y", time.localtime(time.time() if now is None else now))
    lines = ["#", f"#{stamp}"]
    lines.extend(f"{_escape(k, True)}={_escape(v, False)}" for k, v in sorted(props.items()))
    return "\n".join(lines) + "\n"


# --- meta.properties ------------------------------------------------------------------


@dataclass(frozen=True)
class MetaProperties:
    """``meta.properties``: version 1 (KRaft) or 0 (legacy ZooKeeper mode)."""

    version: int
    cluster_id: str | None
    node_id: int | None
    directory_id: uuid.UUID | None = None
    extra: dict[str, str] = field(default_factory=dict)

    def to_properties(self) -> dict[str, str]:
        props = dict(self.extra)
        props["version"] = str(self.version)
        if self.cluster_id is not None:
            props["cluster.id"] = self.cluster_id
        if self.node_id is not None:
            props["node.id" if self.version == 1 else "broker.id"] = str(self.node_id)
        if self.directory_id is not None:
            props["directory.id"] = uuid_to_kafka(self.directory_id)
        return props

    @classmethod
    def from_properties(cls, props: dict[str, str], path: str = META_PROPERTIES_FILE) -> MetaProperties:
        if "version" not in props:
            raise StateFileError(path, "Failed to find version in meta.properties")
        try:
            version = int(props["version"])
        except ValueError:
            raise StateFileError(path, f"invalid version {props['version']!r}") from None
        if version not in (0, 1):
            raise StateFileError(path, f"unknown meta.properties version {version}")
        id_key = "node.id" if version == 1 else "broker.id"
        node_id: int | None = None
        if id_key in props:
            try:
                node_id = int(props[id_key])
            except ValueError:
                raise StateFileError(path, f"invalid {id_key} {props[id_key]!r}") from None
            if node_id < 0:
                raise StateFileError(path, f"invalid negative {id_key} {node_id}")
        elif version == 1:
            raise StateFileError(path, "node.id was not found")
        cluster_id = props.get("cluster.id")
        if version == 1 and cluster_id is None:
            raise StateFileError(path, "cluster.id was not found")
        directory_id = None
        if "directory.id" in props:
            try:
                directory_id = uuid_from_kafka(props["directory.id"])
            except ValueError as exc:
                raise StateFileError(path, f"invalid directory.id: {exc}") from None
        known = {"version", id_key, "cluster.id", "directory.id"}
        extra = {k: v for k, v in props.items() if k not in known}
        return cls(version, cluster_id, node_id, directory_id, extra)

    @classmethod
    def read(cls, path: Path) -> MetaProperties:
        path = Path(path)
        try:
            text = path.read_text(encoding="latin-1")  # Properties.load reads ISO-8859-1
        except FileNotFoundError:
            raise StateFileError(str(path), "file does not exist") from None
        try:
            props = parse_java_properties(text)
        except PropertiesSyntaxError as exc:
            raise StateFileError(str(path), str(exc)) from None
        return cls.from_properties(props, str(path))

    def write(self, path: Path) -> None:
        atomic_write(path, format_java_properties(self.to_properties()).encode("latin-1"))


# --- partition.metadata ---------------------------------------------------------------


def format_partition_metadata(topic_id: uuid.UUID) -> str:
    return f"version: 0\ntopic_id: {uuid_to_kafka(topic_id)}"


def read_partition_metadata(path: Path) -> uuid.UUID:
    """The topic id in a ``partition.metadata`` file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise StateFileError(str(path), "file does not exist") from None
    except UnicodeDecodeError:
        raise StateFileError(str(path), "not UTF-8 text") from None
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) != 2:
        raise StateFileError(str(path), "expected a version line and a topic_id line")
    key0, _, version = lines[0].partition(":")
    key1, _, topic = lines[1].partition(":")
    if key0.strip() != "version" or version.strip() != "0":
        raise StateFileError(str(path), f"unsupported version line {lines[0]!r}")
    if key1.strip() != "topic_id":
        raise StateFileError(str(path), f"expected topic_id, got {lines[1]!r}")
    try:
        return uuid_from_kafka(topic.strip())
    except ValueError as exc:
        raise StateFileError(str(path), str(exc)) from None


def write_partition_metadata(path: Path, topic_id: uuid.UUID = METADATA_TOPIC_ID) -> None:
    atomic_write(path, format_partition_metadata(topic_id).encode("utf-8"))
