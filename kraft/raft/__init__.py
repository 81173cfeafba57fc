"""The sans-IO raft core: roles, elections, replication, voter changes (KIP-595/853/996).

Imports only ``kraft.records`` views, ``kraft.wire`` error codes and ``kraft.messages``; never trio, a clock or a socket.
"""
