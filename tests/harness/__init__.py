"""The tests' one harness: the CLI runner (:mod:`.cli`), the poller
(:mod:`.poll`) and the single-replica context that drives one raft core by
hand (:mod:`.raft_context`). A test file imports them; it defines no runner
or poller of its own (``tests/test_harness_single.py`` checks)."""
