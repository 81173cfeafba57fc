"""The admin client's transport: which node to ask, deadlines, retries (DescribeCluster, DescribeQuorum, voter changes, features).
May import kraft.wire, kraft.messages, kraft.records and the RPC units; never the node or kraft.tools.

Each RPC's request, version and reading of the answer are its unit's
(kraft.raft.rpcs' and kraft.controller's admin-facing RPC modules), which
this package calls.
"""
