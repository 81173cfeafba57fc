"""The tests' one harness: the poller (:mod:`.poll`) and the single-replica
context that drives one raft core by hand (:mod:`.raft_context`). A test
file imports them; it defines no poller of its own."""
