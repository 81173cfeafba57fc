"""The metadata image: committed ``__cluster_metadata`` records folded into the state a Kafka broker holds.
May import kraft.records and kraft.messages; no I/O except :mod:`kraft.image.source`, which reads files.

* :mod:`kraft.image.model` -- :class:`MetadataImage` and its parts;
* :mod:`kraft.image.builder` -- :class:`ImageBuilder`, the replay rules;
* :mod:`kraft.image.changes` -- log items (batches, snapshots) and the change stream;
* :mod:`kraft.image.tree` -- the image as ``kafka-metadata-shell.sh``'s file tree;
* :mod:`kraft.image.session` -- that shell's commands over the tree;
* :mod:`kraft.image.source` -- images read (read-only) from a log directory or a snapshot file.
"""

from kraft.image.builder import ImageBuilder, ReplayError
from kraft.image.changes import Change, LogBatch, LogSnapshot, SnapshotChange, apply_item, changes_of
from kraft.image.model import MetadataImage

__all__ = ["ImageBuilder", "ReplayError", "MetadataImage", "Change", "SnapshotChange", "LogBatch",
           "LogSnapshot", "apply_item", "changes_of"]
