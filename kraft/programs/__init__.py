"""Client programs that embed a node or drive a quorum: the observer (a KraftNode that follows a quorum and keeps its
image) and the reassignment planner. May import kraft.node, kraft.client, kraft.config, kraft.raft, kraft.image,
kraft.wire, kraft.records and kraft.messages; never kraft.sim or kraft.tools.
"""
