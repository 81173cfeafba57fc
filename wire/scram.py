"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka speaks
them (KIP-84): sans-IO state machines for both ends, and fresh salted
credentials (the credentials themselves, which a server keeps instead of
passwords, are :mod:`kraft.wire.scram_credentials`'s).

A server stores, per user and mechanism, only what Kafka's
``UserScramCredentialRecord`` holds: the salt, the iteration count, the
StoredKey (``H(ClientKey)``) and the ServerKey. From those it can check a
client's proof and prove itself, but it cannot recover the password nor
impersonate the client to another server.

Kafka's rules kept here (``ScramSaslServer``/``ScramMessages``):

* channel binding is not supported: the GS2 header must be ``n,,`` or
  ``n,a=<authzid>,`` and an authzid must equal the user name;
* the client's final message must carry a nonce that ends with the
  combined nonce (Kafka's ``endsWith`` check, which librdkafka releases
  that repeat the client nonce rely on; anything else fails the
  exchange), and ``c=`` must be the base64 GS2 header ``n,,``;
* 4096 iterations at least, 16384 at most for stored credentials;
* an extension ``tokenauth`` (delegation tokens) is refused: kraft has no
  delegation tokens.

Every failure raises :class:`ScramError`; its message says what was wrong
for the server's log, while the client is told only that authentication
failed.
"""

from __future__ import annotations

import base64
import hmac
import os
import re
from collections.abc import Callable

from kraft.wire.scram_credentials import (
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    ScramCredential,
    ScramMechanism,
    credential_from_salted,
    salted_password,
)

__all__ = [
    "ScramMechanism",
    "ScramCredential",
    "ScramError",
    "ScramServer",
    "ScramClient",
    "MIN_ITERATIONS",
    "MAX_ITERATIONS",
    "make_credential",
    "salted_password",
    "credential_from_salted",
]

_NONCE_BYTES = 24
_PRINTABLE = re.compile(r"[\x21-\x2b\x2d-\x7e]+")  # RFC 5802 "printable": no comma


class ScramError(Exception):
    """A SCRAM exchange that cannot go on; the message is for logs."""


def make_credential(mechanism: ScramMechanism, password: str, *, iterations: int = MIN_ITERATIONS,
                    salt: bytes | None = None) -> ScramCredential:
    """Salt and derive a password into a stored credential (Kafka's
    ``ScramFormatter.generateCredential``)."""
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise ValueError(f"iterations must be in {MIN_ITERATIONS}..{MAX_ITERATIONS}, got {iterations}")
    salt = os.urandom(32) if salt is None else salt
    salted = salted_password(mechanism, password, salt, iterations)
    return credential_from_salted(mechanism, salted, salt, iterations)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        raise ScramError(f"{what} is not valid base64") from None


def _encode_name(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


def _decode_name(text: str) -> str:
    if re.search(r"=(?!2C|3D)", text):
        raise ScramError("invalid escape in the user name")
    return text.replace("=2C", ",").replace("=3D", "=")


def _attributes(message: str, what: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for part in message.split(","):
        if len(part) < 2 or part[1] != "=" or not part[0].isalpha():
            raise ScramError(f"malformed {what}")
        out.append((part[0], part[2:]))
    return out


def _utf8(data: bytes, what: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ScramError(f"{what} is not UTF-8") from None


class ScramServer:
    """The server side of one exchange. Feed the client's messages in order
    to :meth:`client_first` and :meth:`client_final`; each returns the bytes
    to answer with or raises :class:`ScramError`. ``lookup(user)`` returns
    the stored credential or None."""

    def __init__(self, mechanism: ScramMechanism, lookup: Callable[[str], ScramCredential | None], *,
                 nonce: str | None = None) -> None:
        self.mechanism = mechanism
        self._lookup = lookup
        self._server_nonce = nonce if nonce is not None else _b64(os.urandom(_NONCE_BYTES))
        self._state = "client-first"
        self.username: str | None = None
        self._credential: ScramCredential | None = None
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""

    @property
    def complete(self) -> bool:
        return self._state == "complete"

    def client_first(self, data: bytes) -> bytes:
        if self._state != "client-first":
            raise ScramError(f"unexpected client-first message in state {self._state}")
        self._state = "failed"
        text = _utf8(data, "client-first message")
        m = re.fullmatch(r"([nyp])(?:=[^,]*)?,(a=[^,]*)?,(.*)", text, re.DOTALL)
        if m is None:
            raise ScramError("malformed client-first message (GS2 header)")
        if m.group(1) != "n":
            raise ScramError("channel binding is not supported")
        bare = m.group(3)
        attrs = _attributes(bare, "client-first message")
        if len(attrs) < 2 or attrs[0][0] != "n" or attrs[1][0] != "r":
            raise ScramError("client-first message must start with n= and r=")
        username = _decode_name(attrs[0][1])
        nonce = attrs[1][1]
        if not username or not nonce or not _PRINTABLE.fullmatch(nonce):
            raise ScramError("client-first message has an empty user name or an invalid nonce")
        for key, value in attrs[2:]:
            if key == "m" or (key == "t" and value.startswith("okenauth")):
                raise ScramError("extensions (delegation tokens) are not supported")
        authzid = m.group(2)
        if authzid is not None and _decode_name(authzid[2:]) not in ("", username):
            raise ScramError("authorization id differs from the user name")
        credential = self._lookup(username)
        self.username = username
        if credential is None or credential.mechanism is not self.mechanism:
            raise ScramError(f"unknown user {username!r} for {self.mechanism.mechanism_name}")
        self._credential = credential
        self._client_first_bare = bare
        self._nonce = nonce + self._server_nonce
        self._server_first = f"r={self._nonce},s={_b64(credential.salt)},i={credential.iterations}"
        self._state = "client-final"
        return self._server_first.encode("ascii")

    def client_final(self, data: bytes) -> bytes:
        if self._state != "client-final":
            raise ScramError(f"unexpected client-final message in state {self._state}")
        self._state = "failed"
        text = _utf8(data, "client-final message")
        attrs = _attributes(text, "client-final message")
        if len(attrs) < 3 or attrs[0][0] != "c" or attrs[1][0] != "r" or attrs[-1][0] != "p":
            raise ScramError("client-final message must be c=,r=,...,p=")
        channel_binding = _unb64(attrs[0][1], "channel binding")
        if channel_binding not in (b"n,,",) and not channel_binding.startswith(b"n,a="):
            raise ScramError("invalid channel binding in the client-final message")
        # Kafka checks endsWith, not equality: some librdkafka releases send
        # client nonce + the whole combined nonce, and Kafka accepts them.
        # The proof below still covers the exact text the client sent.
        if not attrs[1][1].endswith(self._nonce):
            raise ScramError("invalid client nonce in the final client message")
        proof = _unb64(attrs[-1][1], "client proof")
        without_proof = text[: text.rindex(",p=")]
        credential = self._credential
        assert credential is not None
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode("utf-8")
        client_signature = self.mechanism.hmac(credential.stored_key, auth_message)
        if len(proof) != len(client_signature):
            raise ScramError("invalid client proof length")
        client_key = bytes(a ^ b for a, b in zip(proof, client_signature))
        if not hmac.compare_digest(self.mechanism.hash(client_key), credential.stored_key):
            raise ScramError(f"invalid credentials for user {self.username!r}")
        server_signature = self.mechanism.hmac(credential.server_key, auth_message)
        self._state = "complete"
        return f"v={_b64(server_signature)}".encode("ascii")


class ScramClient:
    """The client side: :meth:`first` (the client-first message), then
    :meth:`final` with the server-first message, then :meth:`verify` with
    the server-final message (raises unless the server proved it knows the
    credential)."""

    def __init__(self, mechanism: ScramMechanism, username: str, password: str, *, nonce: str | None = None) -> None:
        self.mechanism = mechanism
        self.username = username
        self._password = password
        self._nonce = nonce if nonce is not None else _b64(os.urandom(_NONCE_BYTES))
        self._first_bare = f"n={_encode_name(username)},r={self._nonce}"
        self._server_signature = b""
        self._state = "first"

    @property
    def complete(self) -> bool:
        return self._state == "complete"

    def first(self) -> bytes:
        if self._state != "first":
            raise ScramError("client-first message already sent")
        self._state = "final"
        return f"n,,{self._first_bare}".encode("utf-8")

    def final(self, server_first: bytes) -> bytes:
        if self._state != "final":
            raise ScramError(f"unexpected server-first message in state {self._state}")
        self._state = "failed"
        text = _utf8(server_first, "server-first message")
        attrs = dict(_attributes(text, "server-first message"))
        if "e" in attrs:
            raise ScramError(f"server error: {attrs['e']}")
        nonce, salt_text, iterations_text = attrs.get("r"), attrs.get("s"), attrs.get("i")
        if nonce is None or salt_text is None or iterations_text is None:
            raise ScramError("server-first message lacks r=, s= or i=")
        if not nonce.startswith(self._nonce) or len(nonce) == len(self._nonce):
            raise ScramError("server nonce does not extend the client nonce")
        if not iterations_text.isdigit() or int(iterations_text) < MIN_ITERATIONS:
            raise ScramError(f"iteration count {iterations_text!r} is below {MIN_ITERATIONS}")
        salted = salted_password(self.mechanism, self._password, _unb64(salt_text, "salt"), int(iterations_text))
        without_proof = f"c=biws,r={nonce}"
        auth_message = f"{self._first_bare},{text},{without_proof}".encode("utf-8")
        client_key = self.mechanism.hmac(salted, b"Client Key")
        signature = self.mechanism.hmac(self.mechanism.hash(client_key), auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature))
        self._server_signature = self.mechanism.hmac(self.mechanism.hmac(salted, b"Server Key"), auth_message)
        self._state = "verify"
        return f"{without_proof},p={_b64(proof)}".encode("ascii")

    def verify(self, server_final: bytes) -> None:
        if self._state != "verify":
            raise ScramError(f"unexpected server-final message in state {self._state}")
        self._state = "failed"
        attrs = dict(_attributes(_utf8(server_final, "server-final message"), "server-final message"))
        if "e" in attrs:
            raise ScramError(f"server error: {attrs['e']}")
        signature = _unb64(attrs.get("v", ""), "server signature")
        if not hmac.compare_digest(signature, self._server_signature):
            raise ScramError("the server's signature is wrong: it does not know the credential")
        self._state = "complete"
