"""The code generator: Kafka-format JSON specs in, Python codec modules out.

Never imported at run time; run it with ``python -m kraft.messages.codegen``.
"""

from kraft.messages.codegen.generate import generate

__all__ = ["generate"]
