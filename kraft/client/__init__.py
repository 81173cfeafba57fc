"""Clients of a running quorum: the admin client (DescribeCluster, DescribeQuorum, voter changes, features),
the transport's part of it -- which node, deadlines, retries. Each RPC's request, version and reading of the
answer are its unit's (kraft.raft.rpcs' and kraft.controller's admin-facing RPC modules), which it calls.
May import kraft.wire, kraft.messages, kraft.records, those units; never the node or kraft.tools.
"""
