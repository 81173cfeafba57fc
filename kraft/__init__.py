"""kraft: a Kafka-wire-compatible KRaft node in Python."""

__version__ = "0.1.0"
