"""The tests' one harness. A test file imports it; it defines no poller,
cluster class or config writer of its own (tests/test_harness_clusters.py):

- :mod:`.poll`: the poller;
- :mod:`.configs`: the config writer (server.properties, formatted directories);
- :mod:`.inprocess`: the in-process cluster (KraftNodes in one trio run);
- :mod:`.processes`: the multi-process cluster (``kraft node start`` processes);
- :mod:`.kafka_cluster`: the multi-process cluster with real Kafka
  controllers and brokers beside kraft's.
"""
