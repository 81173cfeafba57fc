"""Our message definitions (``specs/``, Kafka's JSON format), the generated codecs (``generated/``), their runtime.
May import nothing else of kraft; the generator (``kraft.messages.codegen``) is never imported at run time.
"""
