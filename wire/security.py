"""Who may talk to a listener and how a client proves who it is: Kafka's
security protocols, the ``listener.security.protocol.map``, JAAS login
module settings, ``super.users``, the credential stores a SASL listener
checks, and the settings of one listener or one client, built from Kafka's
own configuration keys.

Server side (a node's ``server.properties``; ``<l>`` is the listener name
in lower case, a ``listener.name.<l>.`` key wins over the bare key):

* ``listener.security.protocol.map``: ``NAME:PROTOCOL,...`` with
  PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL.
* ``listener.name.<l>.sasl.enabled.mechanisms`` / ``sasl.enabled.mechanisms``
  (Kafka's default is GSSAPI, which kraft does not have: a SASL listener
  must name PLAIN, SCRAM-SHA-256 and/or SCRAM-SHA-512).
* ``listener.name.<l>.<mechanism>.sasl.jaas.config``: for PLAIN the
  ``user_<name>="<password>"`` options are the accounts (hashed when read:
  only salted credentials are kept in memory); ``username``/``password``
  are what this node sends when it dials its peers.
* SCRAM accounts come from ``UserScramCredentialRecord`` records (the
  metadata log, and the bootstrap metadata as ``kraft storage format
  --add-scram`` writes it): a :class:`ScramCredentialStore` the node fills.
* ``sasl.mechanism.controller.protocol``: the mechanism a node uses to
  reach the other controllers.
* ``super.users``: ``User:alice;User:CN=node-1,O=example``.

Client side (``--command-config`` of the tools, Kafka's client properties):
``security.protocol``, ``sasl.mechanism``, ``sasl.jaas.config`` and the
``ssl.*`` keys of :mod:`kraft.wire.tls`.
"""

from __future__ import annotations

import hmac
import os
import re
import ssl
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from kraft.wire.scram import ScramCredential, ScramMechanism, make_credential, salted_password
from kraft.wire.tls import TlsConfigError, client_context, parse_tls_settings, server_context

__all__ = [
    "SecurityProtocol",
    "SecurityConfigError",
    "SUPPORTED_MECHANISMS",
    "JaasLoginModule",
    "parse_jaas_config",
    "parse_security_protocol_map",
    "parse_super_users",
    "PlainUsers",
    "ScramCredentialStore",
    "ListenerSecurity",
    "ClientSecurity",
    "listener_security",
    "node_client_security",
    "client_security_from_properties",
    "listener_getter",
]

SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_LOGIN_MODULES = {"PLAIN": "PlainLoginModule", "SCRAM-SHA-256": "ScramLoginModule",
                  "SCRAM-SHA-512": "ScramLoginModule"}
_JAAS_FLAGS = ("required", "requisite", "sufficient", "optional")


class SecurityConfigError(ValueError):
    """A security setting that cannot be used; the message names the key."""


class SecurityProtocol(StrEnum):
    PLAINTEXT = "PLAINTEXT"
    SSL = "SSL"
    SASL_PLAINTEXT = "SASL_PLAINTEXT"
    SASL_SSL = "SASL_SSL"

    @property
    def uses_tls(self) -> bool:
        return self in (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL)

    @property
    def uses_sasl(self) -> bool:
        return self in (SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL)

    @classmethod
    def parse(cls, text: str, key: str) -> SecurityProtocol:
        try:
            return cls(text.strip().upper())
        except ValueError:
            raise SecurityConfigError(f"{key}: unknown security protocol {text.strip()!r} "
                                      f"(expected one of {', '.join(p.value for p in cls)})") from None


def parse_security_protocol_map(text: str, key: str = "listener.security.protocol.map") -> dict[str, SecurityProtocol]:
    out: dict[str, SecurityProtocol] = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        name, sep, proto = item.partition(":")
        if not sep or not name.strip():
            raise SecurityConfigError(f"{key}: bad entry {item!r} (expected NAME:PROTOCOL)")
        out[name.strip().upper()] = SecurityProtocol.parse(proto, key)
    return out


# ---------------------------------------------------------------- JAAS


@dataclass(frozen=True, slots=True)
class JaasLoginModule:
    """One login module of a ``sasl.jaas.config`` value."""

    class_name: str
    flag: str
    options: Mapping[str, str] = field(repr=False)


_JAAS_TOKEN = re.compile(r'\s*(?:(?P<quoted>"(?:[^"\\]|\\.)*")|(?P<word>[^\s=;"]+)|(?P<punct>[=;]))', re.DOTALL)


def parse_jaas_config(text: str, key: str = "sasl.jaas.config") -> JaasLoginModule:
    """Kafka's ``JaasConfig``: ``<LoginModule class> <flag> [k=v ...];``
    with exactly one login module. Values may be quoted (``"a b"``, with
    backslash escapes) or bare words."""
    tokens: list[tuple[str, str]] = []
    pos = 0
    stripped = text.strip()
    while pos < len(stripped):
        m = _JAAS_TOKEN.match(stripped, pos)
        if m is None or m.end() == pos:
            raise SecurityConfigError(f"{key}: cannot parse the JAAS configuration near position {pos}")
        pos = m.end()
        if m.group("quoted") is not None:
            tokens.append(("value", re.sub(r"\\(.)", r"\1", m.group("quoted")[1:-1], flags=re.DOTALL)))
        elif m.group("word") is not None:
            tokens.append(("word", m.group("word")))
        else:
            tokens.append(("punct", m.group("punct")))
    if len(tokens) < 3 or tokens[0][0] != "word" or tokens[1][0] != "word":
        raise SecurityConfigError(f"{key}: expected '<LoginModule> <flag> [option=value ...];'")
    class_name, flag = tokens[0][1], tokens[1][1].lower()
    if flag not in _JAAS_FLAGS:
        raise SecurityConfigError(f"{key}: login module control flag {tokens[1][1]!r} is not one of "
                                  f"{', '.join(_JAAS_FLAGS)}")
    options: dict[str, str] = {}
    i = 2
    while i < len(tokens) and tokens[i] != ("punct", ";"):
        if i + 2 >= len(tokens) or tokens[i][0] != "word" or tokens[i + 1] != ("punct", "="):
            raise SecurityConfigError(f"{key}: expected option=value in the JAAS configuration")
        kind, value = tokens[i + 2]
        if kind == "punct":
            raise SecurityConfigError(f"{key}: option {tokens[i][1]} has no value")
        options[tokens[i][1]] = value
        i += 3
    if i >= len(tokens):
        raise SecurityConfigError(f"{key}: the JAAS configuration must end with ';'")
    if i + 1 != len(tokens):
        raise SecurityConfigError(f"{key}: exactly one login module is allowed")
    return JaasLoginModule(class_name, flag, options)


def parse_super_users(text: str) -> frozenset[str]:
    """``super.users``: principals separated by ``;`` (Kafka's format)."""
    users = set()
    for item in filter(None, (s.strip() for s in text.split(";"))):
        kind, sep, name = item.partition(":")
        if not sep or not kind or not name:
            raise SecurityConfigError(f"super.users: expected PrincipalType:name, got {item!r}")
        users.add(item)
    return frozenset(users)


# ---------------------------------------------------------------- credentials


class PlainUsers:
    """PLAIN accounts from a JAAS ``user_<name>="<password>"`` list, kept as
    salted SCRAM-SHA-512 credentials (never the passwords) and checked by
    re-deriving: constant-time compare, and the same work for an unknown
    user as for a known one."""

    def __init__(self, passwords: Mapping[str, str] | None = None) -> None:
        self._users: dict[str, ScramCredential] = {
            user: make_credential(ScramMechanism.SCRAM_SHA_512, password) for user, password in (passwords or {}).items()
        }
        self._decoy = make_credential(ScramMechanism.SCRAM_SHA_512, os.urandom(16).hex())

    def __len__(self) -> int:
        return len(self._users)

    def __contains__(self, user: str) -> bool:
        return user in self._users

    def verify(self, user: str, password: str) -> bool:
        credential = self._users.get(user, self._decoy)
        mechanism = credential.mechanism
        salted = salted_password(mechanism, password, credential.salt, credential.iterations)
        stored = mechanism.hash(mechanism.hmac(salted, b"Client Key"))
        return hmac.compare_digest(stored, credential.stored_key) and user in self._users


class ScramCredentialStore:
    """SCRAM credentials by mechanism and user, as ``UserScramCredentialRecord``
    and ``RemoveUserScramCredentialRecord`` leave them. One store per node,
    shared by its listeners; updated by the node while listeners read it
    (single trio thread: no locking)."""

    def __init__(self) -> None:
        self._credentials: dict[tuple[ScramMechanism, str], ScramCredential] = {}

    def __len__(self) -> int:
        return len(self._credentials)

    def set(self, user: str, credential: ScramCredential) -> None:
        self._credentials[(credential.mechanism, user)] = credential

    def remove(self, user: str, mechanism: ScramMechanism) -> None:
        self._credentials.pop((mechanism, user), None)

    def get(self, mechanism: ScramMechanism, user: str) -> ScramCredential | None:
        return self._credentials.get((mechanism, user))

    def lookup(self, mechanism: ScramMechanism) -> Callable[[str], ScramCredential | None]:
        return lambda user: self.get(mechanism, user)

    def users(self) -> list[tuple[str, str]]:
        """(mechanism name, user) pairs, sorted: what a log line may show."""
        return sorted((m.mechanism_name, u) for m, u in self._credentials)

    def apply_record(self, record: Any) -> bool:
        """Apply a UserScramCredentialRecord / RemoveUserScramCredentialRecord
        (anything else is ignored); True when the store changed."""
        name = type(record).__name__
        if name not in ("UserScramCredentialRecord", "RemoveUserScramCredentialRecord"):
            return False
        try:
            mechanism = ScramMechanism.from_type(int(record.mechanism))
        except ValueError:
            return False
        if name == "RemoveUserScramCredentialRecord":
            self.remove(record.name, mechanism)
        else:
            self.set(record.name, ScramCredential(mechanism, bytes(record.salt), bytes(record.stored_key),
                                                  bytes(record.server_key), int(record.iterations)))
        return True

    def apply_records(self, records: Iterable[Any]) -> int:
        return sum(1 for r in records if self.apply_record(r))

    def copy(self) -> dict[tuple[ScramMechanism, str], ScramCredential]:
        """The credentials as they are now (for :meth:`restore`)."""
        return dict(self._credentials)

    def restore(self, credentials: dict[tuple[ScramMechanism, str], ScramCredential]) -> None:
        """Replace every credential with ``credentials`` (a :meth:`copy`)."""
        self._credentials = dict(credentials)


# ---------------------------------------------------------------- settings


@dataclass(frozen=True, slots=True)
class ListenerSecurity:
    """How one listener authenticates its clients."""

    listener: str
    protocol: SecurityProtocol
    ssl_context: ssl.SSLContext | None = None
    mechanisms: tuple[str, ...] = ()
    plain_users: PlainUsers = field(default_factory=PlainUsers, repr=False)
    scram_credentials: ScramCredentialStore = field(default_factory=ScramCredentialStore, repr=False)


@dataclass(frozen=True, slots=True)
class ClientSecurity:
    """How an outbound connection proves who it is."""

    protocol: SecurityProtocol = SecurityProtocol.PLAINTEXT
    ssl_context: ssl.SSLContext | None = None
    mechanism: str | None = None
    username: str = ""
    password: str = field(default="", repr=False)


def listener_getter(props: Mapping[str, str], listener: str) -> Callable[[str], str | None]:
    """Kafka's listener-prefixed lookup: ``listener.name.<l>.<key>`` first,
    then ``<key>``."""
    prefix = f"listener.name.{listener.lower()}."

    def get(key: str) -> str | None:
        value = props.get(prefix + key)
        return props.get(key) if value is None else value

    return get


def _mechanisms(text: str, key: str) -> tuple[str, ...]:
    mechanisms = tuple(m.strip().upper() for m in text.split(",") if m.strip())
    for m in mechanisms:
        if m not in SUPPORTED_MECHANISMS:
            raise SecurityConfigError(f"{key}: SASL mechanism {m} is not supported by kraft "
                                      f"(supported: {', '.join(SUPPORTED_MECHANISMS)})")
    return mechanisms


def _jaas_for(get: Callable[[str], str | None], mechanism: str, listener: str) -> tuple[JaasLoginModule | None, str]:
    key = f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config"
    text = get(f"{mechanism.lower()}.sasl.jaas.config")
    if text is None and get("sasl.jaas.config") is not None:
        text, key = get("sasl.jaas.config"), "sasl.jaas.config"
    if text is None or not text.strip():
        return None, key
    module = parse_jaas_config(text, key)
    expected = _LOGIN_MODULES[mechanism]
    if not module.class_name.endswith(expected):
        raise SecurityConfigError(f"{key}: {mechanism} needs {expected}, got {module.class_name}")
    return module, key


def _tls(get: Callable[[str], str | None], build: Callable[[Any], ssl.SSLContext]) -> ssl.SSLContext:
    try:
        return build(parse_tls_settings(get))
    except TlsConfigError as e:
        raise SecurityConfigError(str(e)) from None


def listener_security(props: Mapping[str, str], listener: str, protocol: SecurityProtocol,
                      scram_credentials: ScramCredentialStore) -> ListenerSecurity:
    """The server side of one listener from a node's properties."""
    get = listener_getter(props, listener)
    context = _tls(get, server_context) if protocol.uses_tls else None
    mechanisms: tuple[str, ...] = ()
    plain = PlainUsers()
    if protocol.uses_sasl:
        key = f"listener.name.{listener.lower()}.sasl.enabled.mechanisms"
        mechanisms = _mechanisms(get("sasl.enabled.mechanisms") or "GSSAPI", key)
        if not mechanisms:
            raise SecurityConfigError(f"{key}: a {protocol} listener needs at least one mechanism")
        if "PLAIN" in mechanisms:
            module, jaas_key = _jaas_for(get, "PLAIN", listener)
            if module is None:
                raise SecurityConfigError(f"{jaas_key}: required for PLAIN on listener {listener} "
                                          '(PlainLoginModule required user_<name>="<password>" ...;)')
            plain = PlainUsers({k[len("user_"):]: v for k, v in module.options.items()
                                if k.startswith("user_") and len(k) > len("user_")})
    return ListenerSecurity(listener, protocol, context, mechanisms, plain, scram_credentials)


def node_client_security(props: Mapping[str, str], listener: str, protocol: SecurityProtocol) -> ClientSecurity:
    """How a node dials the other controllers on ``listener`` (Kafka's
    controller client: ``sasl.mechanism.controller.protocol`` and the
    listener's JAAS ``username``/``password``; the listener's ``ssl.*``
    keys with their client-side meaning)."""
    get = listener_getter(props, listener)
    context = _tls(get, client_context) if protocol.uses_tls else None
    if not protocol.uses_sasl:
        return ClientSecurity(protocol, context)
    key = "sasl.mechanism.controller.protocol"
    mechanism = (props.get(key) or "GSSAPI").strip().upper()
    _mechanisms(mechanism, key)
    module, jaas_key = _jaas_for(get, mechanism, listener)
    if module is None or "username" not in module.options or "password" not in module.options:
        raise SecurityConfigError(f"{jaas_key}: username and password are required for this node to reach "
                                  f"the other controllers with {mechanism}")
    return ClientSecurity(protocol, context, mechanism, module.options["username"], module.options["password"])


def client_security_from_properties(props: Mapping[str, str]) -> ClientSecurity:
    """A Kafka client's settings (``--command-config`` files)."""
    protocol = SecurityProtocol.parse(props.get("security.protocol", "PLAINTEXT") or "PLAINTEXT", "security.protocol")
    get = props.get
    context = _tls(get, client_context) if protocol.uses_tls else None
    if not protocol.uses_sasl:
        return ClientSecurity(protocol, context)
    mechanism = (props.get("sasl.mechanism") or "GSSAPI").strip().upper()
    _mechanisms(mechanism, "sasl.mechanism")
    text = props.get("sasl.jaas.config")
    if text is None or not text.strip():
        raise SecurityConfigError(f"sasl.jaas.config: required with security.protocol={protocol}")
    module = parse_jaas_config(text)
    expected = _LOGIN_MODULES[mechanism]
    if not module.class_name.endswith(expected):
        raise SecurityConfigError(f"sasl.jaas.config: {mechanism} needs {expected}, got {module.class_name}")
    if "username" not in module.options or "password" not in module.options:
        raise SecurityConfigError("sasl.jaas.config: username and password are required")
    return ClientSecurity(protocol, context, mechanism, module.options["username"], module.options["password"])
