"""The one check ``kraft storage format`` and ``kraft node start`` share
before they touch a metadata log directory, so both refuse the same
things with the same line and fix (issue 33: format formatted what start
then refused, and the other way round).

- which directory: ``metadata.log.dir``, else the first of ``log.dirs``,
  else ``log.dir`` (default ``/tmp/kafka-logs``), as Kafka's
  ``KafkaConfig.metadataLogDir``; a ``metadata.log.dir=`` line left empty is
  refused (Kafka would take the empty path);
- the roles: the node's whole config is checked (``process.roles`` among
  it) by :meth:`kraft.config.NodeConfig.from_properties`, which both call;
- a path that exists but is not a directory (a regular file);
- a ``meta.properties`` that is not one (Kafka's ``MetaProperties`` reader
  refuses it; the line says what to do).
"""

from __future__ import annotations

from pathlib import Path

from kraft.config import metadata_log_dir
from kraft.errors import StorageError
from kraft.records.errors import StateFileError
from kraft.records.state_files import META_PROPERTIES_FILE, MetaProperties

__all__ = ["LogDirError", "metadata_log_dir", "check_log_dir", "read_meta_properties"]

class LogDirError(StorageError):
    """The metadata log directory cannot be used as it is (exit code 4)."""


def check_log_dir(path: Path) -> None:
    """Refuse a path that exists and is not a directory."""
    if path.exists() and not path.is_dir():
        raise LogDirError(f"the metadata log directory {path} is a file, not a directory: move the file away, or "
                          "point metadata.log.dir at a directory")


def read_meta_properties(path: Path) -> MetaProperties | None:
    """``<path>/meta.properties``, None when absent (not formatted); one that
    cannot be read as Kafka's is a :class:`LogDirError` with the fix."""
    meta_path = path / META_PROPERTIES_FILE
    if not meta_path.exists():
        return None
    try:
        return MetaProperties.read(meta_path)
    except StateFileError as e:
        raise LogDirError(f"{meta_path} is not a usable meta.properties ({e.reason}): if this directory holds no "
                          f"other node's log, move it away and run `kraft storage format` again; if it does, "
                          f"fix {META_PROPERTIES_FILE} from a copy") from None
    except OSError as e:
        raise LogDirError(f"cannot read {meta_path}: {e.strerror} (check its permissions)") from None
