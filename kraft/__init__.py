"""kraft: a Kafka-wire-compatible KRaft node in Python, with its metadata-log tools and codecs.
May import nothing at package level (``import kraft`` loads no subpackage); the layers are in pyproject.toml."""

__version__ = "0.1.0"
