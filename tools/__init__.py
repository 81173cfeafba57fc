"""The ``kraft`` command line's commands, one module each (Kafka's ``kafka-*.sh`` tools), plus bench/ and spark/.
May import anything of kraft; heavy modules (trio, the node, pyspark, prometheus_client) only inside the commands.
"""
