"""Clients of a running quorum: the admin client (DescribeCluster, DescribeQuorum, voter changes, features).
May import kraft.wire, kraft.messages, kraft.records and the raft layer's models (the one DescribeQuorum model,
:mod:`kraft.raft.rpcs.describe_quorum_rpc`) and the admin-facing RPC units it calls; never the node or kraft.tools.
"""
