"""Clients of a running quorum: the admin client (:mod:`kraft.client.admin`:
DescribeCluster, DescribeQuorum, voter changes) and its models of the answers.

May import ``kraft.wire``, ``kraft.messages`` and ``kraft.records``; never the node, the raft core or ``kraft.tools``.
"""
