"""The code generator: Kafka-format JSON specs in, Python codec modules out (``python -m kraft.messages.codegen``).
May import the standard library only; never imported at run time.
"""

from kraft.messages.codegen.generate import generate

__all__ = ["generate"]
