"""How ``kraft dump-log`` and the Spark data source describe a record: type, version, decoded message, Kafka's JSON.
Imports kraft.records and kraft.messages; nothing heavy (orjson only).
"""
