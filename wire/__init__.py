"""Kafka's wire protocol around the generated message codecs: size-prefixed
frames (:mod:`.framing`), request/response headers and their versions
(:mod:`.headers`), the api-key registry (:mod:`.apis`), whole requests and
responses (:mod:`.codec`) and Kafka's error codes (:mod:`.errors`)."""
