"""Kafka's wire protocol around the generated codecs: framing, headers, api registry, connections, server, TLS, SASL.
May import kraft.messages only (never kraft.records, the raft core, the node or the tools).

Size-prefixed frames (:mod:`.framing`), request/response headers and their
versions (:mod:`.headers`), the api-key registry (:mod:`.apis`), whole
requests and responses (:mod:`.codec`), Kafka's error codes (:mod:`.errors`),
bootstrap address lists (:mod:`.addresses`), the calling side (:mod:`.network_client`,
Kafka's ``NetworkClient``) and the server.
"""
