"""SCRAM's stored credentials (RFC 5802, KIP-84): the mechanisms Kafka
speaks, the salt-iterations-keys record a server keeps instead of a
password, and its derivation from a salted password.

Apart from :mod:`kraft.wire.scram` (the exchanges, and fresh salts from
the OS) so the controller, which validates and stores credentials
(``ScramControlManager``), imports no randomness and no authentication
state machine.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from enum import Enum

__all__ = ["ScramMechanism", "ScramCredential", "MIN_ITERATIONS", "MAX_ITERATIONS", "salted_password",
           "credential_from_salted"]

#: Kafka's bounds for stored credentials (``ScramMechanism.minIterations``/``maxIterations``).
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384


class ScramMechanism(Enum):
    """Kafka's mechanisms, with the type ids ``UserScramCredentialRecord`` uses."""

    SCRAM_SHA_256 = ("SCRAM-SHA-256", 1, "sha256")
    SCRAM_SHA_512 = ("SCRAM-SHA-512", 2, "sha512")

    def __init__(self, mechanism_name: str, type_id: int, hash_name: str) -> None:
        self.mechanism_name = mechanism_name
        self.type_id = type_id
        self.hash_name = hash_name

    @classmethod
    def from_name(cls, name: str) -> ScramMechanism:
        for m in cls:
            if m.mechanism_name == name.upper():
                return m
        raise ValueError(f"unknown SCRAM mechanism {name!r}")

    @classmethod
    def from_type(cls, type_id: int) -> ScramMechanism:
        for m in cls:
            if m.type_id == type_id:
                return m
        raise ValueError(f"unknown SCRAM mechanism type {type_id}")

    def hmac(self, key: bytes, data: bytes) -> bytes:
        return hmac.new(key, data, self.hash_name).digest()

    def hash(self, data: bytes) -> bytes:
        return hashlib.new(self.hash_name, data).digest()


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """What a server keeps for one user under one mechanism (never the
    password): Kafka's ``ScramCredential``."""

    mechanism: ScramMechanism
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def __repr__(self) -> str:  # keys stay out of logs and tracebacks
        return f"ScramCredential({self.mechanism.mechanism_name}, iterations={self.iterations})"


def salted_password(mechanism: ScramMechanism, password: str, salt: bytes, iterations: int) -> bytes:
    """RFC 5802 ``Hi(Normalize(password), salt, i)``. Kafka does not apply
    SASLprep; neither do we (UTF-8 bytes as given)."""
    return hashlib.pbkdf2_hmac(mechanism.hash_name, password.encode("utf-8"), salt, iterations)


def credential_from_salted(mechanism: ScramMechanism, salted: bytes, salt: bytes, iterations: int) -> ScramCredential:
    client_key = mechanism.hmac(salted, b"Client Key")
    return ScramCredential(mechanism, salt, mechanism.hash(client_key), mechanism.hmac(salted, b"Server Key"),
                           iterations)
