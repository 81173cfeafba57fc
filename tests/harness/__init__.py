"""The tests' one harness: the CLI runner (:mod:`.cli`) and the poller
(:mod:`.poll`). A test file imports them; it defines no runner or poller of
its own (``tests/test_harness_single.py`` checks)."""
