"""Programs above the node: the observer (an embedded KraftNode following a quorum) and the reassignment planner.
May import kraft.node, kraft.admin_client, kraft.config, kraft.raft, kraft.image, kraft.wire, kraft.records, kraft.messages;
never kraft.sim or kraft.tools.

A program is library code a command runs and a test or an embedder can run
without the command line: it embeds a :class:`~kraft.node.node.KraftNode` or
plans with :mod:`kraft.admin_client`, and prints nothing. The command that
runs it, its options and its output are in :mod:`kraft.tools`.
"""
