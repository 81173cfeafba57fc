"""The admin client of a running quorum (Kafka's ``Admin``): which node to ask, deadlines, retries.
May import kraft.wire, kraft.messages, kraft.records and the RPC units; never the node or kraft.tools.

Each RPC's request, version and reading of the answer (DescribeCluster,
DescribeQuorum, voter changes, features) are its unit's: kraft.raft.rpcs'
and kraft.controller's admin-facing RPC modules, which this package calls.

The line between the three packages above the node: here, the requests an
admin sends to a quorum it is not part of (no node, no command line); in
:mod:`kraft.programs`, library programs that embed a node or plan with this
client; in :mod:`kraft.tools`, the command line's commands (click, printing,
exit codes), which call the other two.
It was ``kraft.client`` until issue 45, a name that said neither which client nor whose.
"""
