"""The tests' one harness: the poller (:mod:`.poll`). A test file imports
it; it defines no poller of its own."""
