"""Clients of a running quorum: the admin client (DescribeCluster, DescribeQuorum, voter changes) and its models.
May import kraft.wire, kraft.messages and kraft.records; never the node, the raft core or kraft.tools.
"""
