"""Client programs above the node: the observer (an embedded KraftNode following a quorum) and the reassignment planner.
May import kraft.node, kraft.admin_client, kraft.config, kraft.raft, kraft.image, kraft.wire, kraft.records, kraft.messages;
never kraft.sim or kraft.tools.
"""
