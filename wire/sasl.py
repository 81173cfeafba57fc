"""SASL on a Kafka connection (KIP-43, KIP-152): sans-IO state machines for
the server and the client side. Requests in, responses out, no sockets.

Server (Kafka's ``SaslServerAuthenticator``), one per connection::

    handshake ──SaslHandshake(mechanism enabled)──▶ authenticate
    authenticate ──SaslAuthenticate (one or more)──▶ complete
    any ──protocol error / bad credentials──▶ failed (answer, then close)

* Before ``complete`` only ApiVersions, SaslHandshake and SaslAuthenticate
  may arrive (the connection code enforces it for other apis).
* SaslHandshake v1 is required: v0 announced unframed SASL tokens
  (pre-KIP-152), which kraft does not speak; a v0 handshake is answered
  with ``UNSUPPORTED_VERSION`` and the connection closed.
* An unknown mechanism: ``UNSUPPORTED_SASL_MECHANISM`` with the enabled
  ones listed, then close. SaslAuthenticate before SaslHandshake, or a
  second SaslHandshake: ``ILLEGAL_SASL_STATE``, then close.
* Bad credentials, a malformed token, a SCRAM nonce mismatch:
  ``SASL_AUTHENTICATION_FAILED`` with Kafka's message (which says nothing
  about *what* was wrong; the server log does), then close.
* Re-authentication (KIP-368) is not supported: ``session_lifetime_ms`` is
  0 and a SaslHandshake on an authenticated connection is answered with
  ``ILLEGAL_SASL_STATE`` by the connection code (as Kafka's request
  handler answers it when re-authentication is off).

Client: :class:`SaslClient` produces the tokens for PLAIN and SCRAM and
checks the server's final SCRAM message (a server that does not know the
credential is refused).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kraft.messages.generated.sasl_authenticate_request import SaslAuthenticateRequest
from kraft.messages.generated.sasl_authenticate_response import SaslAuthenticateResponse
from kraft.messages.generated.sasl_handshake_request import SaslHandshakeRequest
from kraft.messages.generated.sasl_handshake_response import SaslHandshakeResponse
from kraft.wire.errors import ErrorCode
from kraft.wire.scram import ScramClient, ScramError, ScramMechanism, ScramServer
from kraft.wire.security import PlainUsers, ScramCredentialStore

__all__ = [
    "SaslStep",
    "SaslServer",
    "SaslClient",
    "SaslClientError",
    "illegal_state_response",
]


@dataclass(frozen=True, slots=True)
class SaslStep:
    """What the server does with one request: answer ``response``; when
    ``close`` the connection is closed after the answer (``reason`` is the
    log line); ``principal`` is set once authentication completed."""

    response: Any
    close: bool = False
    reason: str = ""
    principal: str | None = None


def illegal_state_response(api_key_is_handshake: bool, message: str) -> Any:
    if api_key_is_handshake:
        return SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[])
    return SaslAuthenticateResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, error_message=message)


def _failed_message(mechanism: str) -> str:
    return f"Authentication failed during authentication due to invalid credentials with SASL mechanism {mechanism}"


class SaslServer:
    """The server side of one connection's SASL exchange."""

    def __init__(self, mechanisms: tuple[str, ...], plain_users: PlainUsers,
                 scram_credentials: ScramCredentialStore) -> None:
        self.mechanisms = mechanisms
        self._plain = plain_users
        self._scram_store = scram_credentials
        self.state = "handshake"
        self.mechanism: str | None = None
        self.principal: str | None = None
        self._scram: ScramServer | None = None
        self._plain_user = ""

    @property
    def complete(self) -> bool:
        return self.state == "complete"

    def handshake(self, version: int, request: SaslHandshakeRequest) -> SaslStep:
        if self.state != "handshake":
            state, self.state = self.state, "failed"
            return SaslStep(illegal_state_response(True, ""), True,
                            f"SaslHandshake in state {state}: only one handshake per connection")
        self.state = "failed"
        mechanism = request.mechanism
        if version < 1:
            return SaslStep(SaslHandshakeResponse(error_code=ErrorCode.UNSUPPORTED_VERSION,
                                                  mechanisms=list(self.mechanisms)), True,
                            "SaslHandshake v0 (unframed SASL tokens) is not supported")
        if mechanism not in self.mechanisms:
            return SaslStep(SaslHandshakeResponse(error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                                                  mechanisms=list(self.mechanisms)), True,
                            f"unsupported SASL mechanism {mechanism!r} (enabled: {', '.join(self.mechanisms)})")
        self.mechanism = mechanism
        if mechanism != "PLAIN":
            scram = ScramMechanism.from_name(mechanism)
            self._scram = ScramServer(scram, self._scram_store.lookup(scram))
        self.state = "authenticate"
        return SaslStep(SaslHandshakeResponse(error_code=ErrorCode.NONE, mechanisms=list(self.mechanisms)))

    def authenticate(self, version: int, request: SaslAuthenticateRequest) -> SaslStep:
        """Handle one SaslAuthenticate. PLAIN checks run PBKDF2: call this
        off the event loop (a worker thread) on a server."""
        if self.state != "authenticate":
            state = self.state
            self.state = "failed"
            return SaslStep(illegal_state_response(False, "Unexpected SaslAuthenticate request: no SaslHandshake "
                                                   "completed on this connection"), True,
                            f"SaslAuthenticate in state {state} (before a successful SaslHandshake)")
        assert self.mechanism is not None
        token = bytes(request.auth_bytes)
        try:
            if self._scram is None:
                reply = self._plain_step(token)
            elif not self._scram.username:
                reply = self._scram.client_first(token)
            else:
                reply = self._scram.client_final(token)
        except ScramError as e:
            self.state = "failed"
            user = "" if self._scram is None or self._scram.username is None else f" for user {self._scram.username!r}"
            return SaslStep(SaslAuthenticateResponse(error_code=ErrorCode.SASL_AUTHENTICATION_FAILED,
                                                     error_message=_failed_message(self.mechanism)), True,
                            f"{self.mechanism} authentication failed{user}: {e}")
        done = self._scram is None or self._scram.complete
        principal = None
        if done:
            self.state = "complete"
            name = self._plain_user if self._scram is None else self._scram.username
            self.principal = principal = f"User:{name}"
        return SaslStep(SaslAuthenticateResponse(error_code=ErrorCode.NONE, error_message=None, auth_bytes=reply,
                                                 session_lifetime_ms=0), principal=principal)

    def _plain_step(self, token: bytes) -> bytes:
        # RFC 4616: [authzid] NUL authcid NUL passwd
        parts = token.split(b"\x00")
        if len(parts) != 3:
            raise ScramError("malformed PLAIN token")
        try:
            authzid, user, password = (p.decode("utf-8") for p in parts)
        except UnicodeDecodeError:
            raise ScramError("PLAIN token is not UTF-8") from None
        if not user or not password:
            raise ScramError("PLAIN token has an empty user name or password")
        if authzid and authzid != user:
            raise ScramError("client requested an authorization id that is different from the user name")
        if not self._plain.verify(user, password):
            raise ScramError(f"invalid user name or password for user {user!r}")
        self._plain_user = user
        return b""


class SaslClientError(Exception):
    """The client cannot go on (the server's SCRAM proof is wrong, ...)."""


class SaslClient:
    """The client side: :meth:`first_token`, then :meth:`next_token` with
    each server answer until it returns None (done)."""

    def __init__(self, mechanism: str, username: str, password: str) -> None:
        self.mechanism = mechanism
        self._username = username
        self._password = password
        self._scram = None if mechanism == "PLAIN" else ScramClient(
            ScramMechanism.from_name(mechanism), username, password)
        self._sent = 0

    def first_token(self) -> bytes:
        self._sent = 1
        if self._scram is None:
            return b"\x00" + self._username.encode("utf-8") + b"\x00" + self._password.encode("utf-8")
        return self._scram.first()

    def next_token(self, server_token: bytes) -> bytes | None:
        """The next token to send, or None when the exchange is complete."""
        try:
            if self._scram is None:
                return None
            if self._sent == 1:
                self._sent = 2
                return self._scram.final(server_token)
            self._scram.verify(server_token)
            return None
        except ScramError as e:
            raise SaslClientError(str(e)) from None
