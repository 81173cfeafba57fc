"""Multi-node interaction transcripts (etcd raft's ``interaction`` tests):
see :mod:`tests.raft.interaction.driver` for the format."""
