"""The trio node around the raft core: log I/O, RPCs, admin, features, snapshots, metrics, the observer.
May import kraft.config, .client, .raft, .image, .wire, .records and .messages; never kraft.sim or kraft.tools.

Subsystems depend on narrow interfaces (the :class:`~kraft.node.shell.RaftShell`,
small objects, Protocols), never on :class:`~kraft.node.node.KraftNode`, which composes them.
"""
