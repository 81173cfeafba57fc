"""The tests' one harness. A test file imports it; it defines no CLI runner,
poller, cluster class or config writer of its own (tests/test_harness_single.py,
tests/test_harness_clusters.py):

- :mod:`.cli`: the CLI runner (in this process or a process of its own);
- :mod:`.poll`: the poller;
- :mod:`.configs`: the config writer (server.properties, formatted directories);
- :mod:`.inprocess`: the in-process cluster (KraftNodes in one trio run);
- :mod:`.processes`: the multi-process cluster (``kraft node start`` processes);
- :mod:`.kafka_cluster`: the multi-process cluster with real Kafka
  controllers and brokers beside kraft's;
- :mod:`.raft_context`: the single-replica context that drives one raft core by hand.
"""
