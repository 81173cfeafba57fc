"""Real Apache Kafka in the test suite: its released jars (fetched by
``.ci/kafka-jars``), real controllers and brokers, and Kafka's own tools run
by their main classes. Nothing here imitates Kafka."""
