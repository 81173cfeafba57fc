"""TLS for listeners and outbound connections, from Kafka's ``ssl.*``
settings in their PEM form (the standard library's :mod:`ssl` reads PEM
only; JKS and PKCS12 keystores are refused with a message saying so).

Kafka keys read here (each may be prefixed with
``listener.name.<listener>.`` on a node; the caller resolves that):

* ``ssl.keystore.type`` must be ``PEM`` when a keystore is given;
  ``ssl.keystore.location`` names a PEM file holding the private key and
  the certificate chain, or ``ssl.keystore.key`` and
  ``ssl.keystore.certificate.chain`` hold them inline; ``ssl.key.password``
  decrypts an encrypted key.
* ``ssl.truststore.type`` must be ``PEM`` when a truststore is given;
  ``ssl.truststore.location`` (a PEM file of CA certificates) or
  ``ssl.truststore.certificates`` (inline). Without one the system's CA
  store is used (Kafka uses the JVM's).
* ``ssl.client.auth`` (server side): ``none`` (default), ``requested``,
  ``required``.
* ``ssl.endpoint.identification.algorithm`` (client side): ``https``
  (default, as in Kafka) checks the server's certificate against the host
  name or IP address dialled; an empty value turns the check off.
* ``ssl.enabled.protocols`` (default ``TLSv1.2,TLSv1.3``): TLS 1.2 and 1.3
  only; anything older is refused.

A principal from a client certificate is Kafka's default
(``ssl.principal.mapping.rules=DEFAULT``): ``User:`` + the subject's
distinguished name in RFC 2253 form (``User:CN=alice,OU=ops,O=example``).
Attribute types Java prints as dotted OIDs (``emailAddress``) are written
by their short names here: that is the one known difference.
"""

from __future__ import annotations

import logging
import os
import ssl
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import trio
from typing import Any

__all__ = [
    "TlsConfigError",
    "TlsSettings",
    "parse_tls_settings",
    "server_context",
    "client_context",
    "certificate_principal",
    "ANONYMOUS",
    "close_quietly",
]

log = logging.getLogger("kraft.wire")

ANONYMOUS = "User:ANONYMOUS"
_PROTOCOLS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
# RFC 2253 / X500Principal short names for the attribute types Python names.
_SHORT_NAMES = {
    "commonName": "CN", "organizationName": "O", "organizationalUnitName": "OU", "countryName": "C",
    "stateOrProvinceName": "ST", "localityName": "L", "domainComponent": "DC", "userId": "UID",
    "streetAddress": "STREET",
}


class TlsConfigError(ValueError):
    """An ``ssl.*`` setting that cannot be used; the message names the key."""


@dataclass(frozen=True, slots=True)
class TlsSettings:
    """The ``ssl.*`` settings of one listener or client, checked."""

    keystore_location: str | None = None
    keystore_key: str | None = None
    keystore_certificate_chain: str | None = None
    key_password: str | None = None
    truststore_location: str | None = None
    truststore_certificates: str | None = None
    client_auth: str = "none"
    endpoint_identification: bool = True
    protocols: tuple[str, ...] = ("TLSv1.2", "TLSv1.3")

    def __repr__(self) -> str:  # the inline key and its password stay out of logs
        return (f"TlsSettings(keystore={self.keystore_location or ('inline' if self.keystore_key else None)}, "
                f"truststore={self.truststore_location or ('inline' if self.truststore_certificates else None)}, "
                f"client_auth={self.client_auth}, endpoint_identification={self.endpoint_identification})")

    @property
    def has_keystore(self) -> bool:
        return bool(self.keystore_location or self.keystore_key)


def parse_tls_settings(get: Callable[[str], str | None]) -> TlsSettings:
    """Read and check the ``ssl.*`` keys; ``get(key)`` returns a value or None."""

    def value(key: str) -> str | None:
        v = get(key)
        return None if v is None or not v.strip() else v.strip()

    keystore_type = (value("ssl.keystore.type") or "JKS").upper()
    location, key, chain = value("ssl.keystore.location"), value("ssl.keystore.key"), value(
        "ssl.keystore.certificate.chain")
    if (location or key or chain) and keystore_type != "PEM":
        raise TlsConfigError(f"ssl.keystore.type: kraft reads PEM keystores only, got {keystore_type} "
                             "(convert with openssl and set ssl.keystore.type=PEM)")
    if location and (key or chain):
        raise TlsConfigError("ssl.keystore.location: not allowed together with ssl.keystore.key / "
                             "ssl.keystore.certificate.chain")
    if bool(key) != bool(chain):
        raise TlsConfigError("ssl.keystore.key and ssl.keystore.certificate.chain: give both or neither")
    if location and not Path(location).is_file():
        raise TlsConfigError(f"ssl.keystore.location: {location} is not a readable file")
    truststore_type = (value("ssl.truststore.type") or "JKS").upper()
    trust_location, trust_inline = value("ssl.truststore.location"), value("ssl.truststore.certificates")
    if (trust_location or trust_inline) and truststore_type != "PEM":
        raise TlsConfigError(f"ssl.truststore.type: kraft reads PEM truststores only, got {truststore_type}")
    if trust_location and trust_inline:
        raise TlsConfigError("ssl.truststore.location: not allowed together with ssl.truststore.certificates")
    if trust_location and not Path(trust_location).is_file():
        raise TlsConfigError(f"ssl.truststore.location: {trust_location} is not a readable file")
    client_auth = (value("ssl.client.auth") or "none").lower()
    if client_auth not in _CLIENT_AUTH:
        raise TlsConfigError(f"ssl.client.auth: expected none, requested or required, got {client_auth!r}")
    algorithm = get("ssl.endpoint.identification.algorithm")
    algorithm = "https" if algorithm is None else algorithm.strip().lower()
    if algorithm not in ("https", ""):
        raise TlsConfigError(f"ssl.endpoint.identification.algorithm: expected https or empty, got {algorithm!r}")
    protocols = tuple(p.strip() for p in (value("ssl.enabled.protocols") or "TLSv1.2,TLSv1.3").split(",")
                      if p.strip())
    for p in protocols:
        if p not in _PROTOCOLS:
            raise TlsConfigError(f"ssl.enabled.protocols: {p} is not allowed (TLSv1.2 and TLSv1.3 only)")
    if not protocols:
        raise TlsConfigError("ssl.enabled.protocols: empty")
    if value("ssl.cipher.suites"):
        log.warning("ssl.cipher.suites is ignored: kraft uses the ssl module's default cipher suites")
    return TlsSettings(location, key, chain, get("ssl.key.password"), trust_location, trust_inline, client_auth,
                       algorithm == "https", protocols)


def _versions(context: ssl.SSLContext, settings: TlsSettings) -> None:
    versions = sorted(_PROTOCOLS[p] for p in settings.protocols)
    context.minimum_version = versions[0]
    context.maximum_version = versions[-1]


def _load_keystore(context: ssl.SSLContext, settings: TlsSettings) -> None:
    password = settings.key_password
    try:
        if settings.keystore_location:
            context.load_cert_chain(settings.keystore_location, password=password)
            return
        if not settings.keystore_key:
            return
        # The ssl module loads keys from files only: a private 0600 file
        # that lives for the duration of the call.
        fd, path = tempfile.mkstemp(prefix="kraft-keystore-", suffix=".pem")
        try:
            with os.fdopen(fd, "w", encoding="ascii") as f:
                f.write(settings.keystore_key.strip() + "\n" + (settings.keystore_certificate_chain or "").strip()
                        + "\n")
            context.load_cert_chain(path, password=password)
        finally:
            os.unlink(path)
    except (ssl.SSLError, OSError, ValueError) as e:
        raise TlsConfigError(f"ssl.keystore: cannot load the key and certificate chain ({_ssl_reason(e)}; "
                             "check ssl.key.password)") from None


def _load_truststore(context: ssl.SSLContext, settings: TlsSettings, purpose: ssl.Purpose) -> None:
    try:
        if settings.truststore_location:
            context.load_verify_locations(cafile=settings.truststore_location)
        elif settings.truststore_certificates:
            context.load_verify_locations(cadata=settings.truststore_certificates)
        else:
            context.load_default_certs(purpose)
    except (ssl.SSLError, OSError, ValueError) as e:
        raise TlsConfigError(f"ssl.truststore: cannot load the certificates ({_ssl_reason(e)})") from None


def _ssl_reason(e: BaseException) -> str:
    return getattr(e, "reason", None) or getattr(e, "strerror", None) or str(e)


def server_context(settings: TlsSettings) -> ssl.SSLContext:
    """A listener's context: our key and chain, client certificates checked
    against the truststore per ``ssl.client.auth``."""
    if not settings.has_keystore:
        raise TlsConfigError("ssl.keystore.location (or ssl.keystore.key): required for an SSL or SASL_SSL listener")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _versions(context, settings)
    _load_keystore(context, settings)
    context.verify_mode = _CLIENT_AUTH[settings.client_auth]
    if context.verify_mode != ssl.CERT_NONE:
        _load_truststore(context, settings, ssl.Purpose.CLIENT_AUTH)
    return context


def client_context(settings: TlsSettings) -> ssl.SSLContext:
    """An outbound context: the server's chain checked against the
    truststore, its name checked unless endpoint identification is off, our
    own certificate offered when a keystore is given (client auth)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _versions(context, settings)
    context.check_hostname = settings.endpoint_identification
    context.verify_mode = ssl.CERT_REQUIRED
    _load_truststore(context, settings, ssl.Purpose.SERVER_AUTH)
    _load_keystore(context, settings)
    return context


def _escape(value: str) -> str:
    out = []
    for i, ch in enumerate(value):
        if ch in ',+"\\<>;' or (i == 0 and ch in "# ") or (i == len(value) - 1 and ch == " "):
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def certificate_principal(peer_certificate: dict[str, Any] | None) -> str:
    """Kafka's default SSL principal for a peer certificate (as returned by
    ``SSLObject.getpeercert()``): ``User:`` + the RFC 2253 subject, or
    ``User:ANONYMOUS`` without a certificate."""
    if not peer_certificate or not peer_certificate.get("subject"):
        return ANONYMOUS
    rdns = []
    for rdn in reversed(peer_certificate["subject"]):  # RFC 2253: most specific first
        rdns.append("+".join(f"{_SHORT_NAMES.get(name, name)}={_escape(str(v))}" for name, v in rdn))
    return "User:" + ",".join(rdns)


async def close_quietly(stream: trio.abc.AsyncResource) -> None:
    """Close without raising: a TLS stream whose socket is already gone
    may fail its close with an OSError, and that must not escape a
    connection task."""
    try:
        await trio.aclose_forcefully(stream)
    except OSError:
        pass
