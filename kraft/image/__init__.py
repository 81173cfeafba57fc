"""The metadata image: committed ``__cluster_metadata`` records folded into the state a Kafka broker holds.
May import kraft.records and kraft.messages; no I/O except :mod:`kraft.image.metadata_source`, which reads files.

* :mod:`kraft.image.model` -- :class:`MetadataImage` and its parts;
* :mod:`kraft.image.builder` -- :class:`ImageBuilder`, the replay rules;
* :mod:`kraft.image.changes` -- log items (batches, snapshots) and the change stream;
* :mod:`kraft.image.printing` -- how Kafka prints image values (``toString``, printers);
* :mod:`kraft.image.tree` -- the image as Kafka 4.x ``kafka-metadata-shell.sh``'s tree of nodes;
* :mod:`kraft.image.glob` -- that shell's paths and globs;
* :mod:`kraft.image.commands` -- its commands, one class each, and their registry;
* :mod:`kraft.image.session` -- one shell session: a line in, Kafka's output out;
* :mod:`kraft.image.diff` -- what changed between two images, in the tree's form;
* :mod:`kraft.image.metadata_source` -- images read (read-only) from a log directory or a snapshot file;
* :mod:`kraft.image.history` -- a directory's images at any offset or time it covers.
"""

from kraft.image.builder import ImageBuilder, ReplayError
from kraft.image.changes import Change, LogBatch, LogSnapshot, SnapshotChange, apply_item, changes_of
from kraft.image.model import MetadataImage

__all__ = ["ImageBuilder", "ReplayError", "MetadataImage", "Change", "SnapshotChange", "LogBatch",
           "LogSnapshot", "apply_item", "changes_of"]
