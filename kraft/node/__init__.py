"""The trio node around the raft core: log I/O, RPCs, admin, features, snapshots, metrics.
May import kraft.config, .admin_client, .raft, .image, .wire, .records and .messages; never kraft.sim or kraft.tools.

A request goes one way: inbound, listener -> :mod:`~kraft.node.controller_apis` -> the raft
driver (:mod:`~kraft.node.raft_driver`, whose core answers) -> the same connection; outbound,
core -> :mod:`~kraft.node.network_channel` -> the peer, its answer back into the raft driver.
Parts get a read-only view of the raft (:mod:`~kraft.node.raft_view`) or a few values; only the
embedding API (:mod:`~kraft.node.node`) and the wiring (:mod:`~kraft.node.raft_manager`) import
``KraftNode`` and the raft driver (an import-linter contract in pyproject.toml).
"""
