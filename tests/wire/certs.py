"""Certificates for the TLS tests, made with the ``openssl`` command line
(P-256 keys: fast to make). One CA signs a server certificate valid for
``localhost`` and ``127.0.0.1`` and client certificates; a second CA that
nobody trusts signs a rogue client certificate.

Each keystore is one PEM file holding the private key and the certificate
chain, as Kafka's ``ssl.keystore.type=PEM`` ``ssl.keystore.location``
expects it.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

__all__ = ["Certs", "make_certs", "require_openssl"]


def require_openssl() -> str:
    path = shutil.which("openssl")
    if path is None:
        pytest.skip("the openssl command is not installed: cannot make test certificates")
    return path


def _run(*args: str, cwd: Path) -> None:
    result = subprocess.run([require_openssl(), *args], cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)} failed: {result.stderr}")


def _key(name: str, cwd: Path) -> None:
    _run("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", f"{name}.key", cwd=cwd)


def _ca(name: str, cwd: Path) -> None:
    _key(name, cwd)
    _run("req", "-x509", "-new", "-key", f"{name}.key", "-out", f"{name}.crt", "-days", "3",
         "-subj", f"/O=kraft tests/CN={name}", cwd=cwd)


def _signed(name: str, subject: str, ca: str, cwd: Path, san: str | None = None) -> None:
    _key(name, cwd)
    _run("req", "-new", "-key", f"{name}.key", "-out", f"{name}.csr", "-subj", subject, cwd=cwd)
    ext = cwd / f"{name}.ext"
    lines = ["basicConstraints=CA:FALSE", "keyUsage=digitalSignature,keyEncipherment",
             "extendedKeyUsage=serverAuth,clientAuth"]
    if san:
        lines.append(f"subjectAltName={san}")
    ext.write_text("\n".join(lines) + "\n")
    _run("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key", "-CAcreateserial",
         "-out", f"{name}.crt", "-days", "3", "-extfile", ext.name, cwd=cwd)
    # The keystore: key, then the chain (leaf first).
    (cwd / f"{name}.pem").write_text((cwd / f"{name}.key").read_text() + (cwd / f"{name}.crt").read_text()
                                     + (cwd / f"{ca}.crt").read_text())


@dataclass(frozen=True)
class Certs:
    directory: Path

    def keystore(self, name: str) -> Path:
        return self.directory / f"{name}.pem"

    def key(self, name: str) -> Path:
        return self.directory / f"{name}.key"

    def cert(self, name: str) -> Path:
        return self.directory / f"{name}.crt"

    @property
    def truststore(self) -> Path:
        return self.directory / "ca.crt"

    @property
    def encrypted_server_key(self) -> Path:
        """The server key encrypted with :data:`KEY_PASSWORD` (PKCS#8)."""
        return self.directory / "server-encrypted.key"

    def server_props(self, client_auth: str = "none") -> dict[str, str]:
        """Kafka ``ssl.*`` settings for a listener (and the node's own
        outbound connections: the same keystore is its client certificate)."""
        return {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(self.keystore("server")),
                "ssl.truststore.type": "PEM", "ssl.truststore.location": str(self.truststore),
                "ssl.client.auth": client_auth}

    def client_props(self, name: str | None = None) -> dict[str, str]:
        props = {"ssl.truststore.type": "PEM", "ssl.truststore.location": str(self.truststore)}
        if name is not None:
            props.update({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(self.keystore(name))})
        return props


KEY_PASSWORD = "key-secret"


def make_certs(directory: Path) -> Certs:
    """The CA, ``server`` (localhost, 127.0.0.1), clients ``admin`` and
    ``alice`` (CN=admin / CN=alice, OU=ops, O=kraft tests) and ``rogue``
    (signed by an untrusted CA)."""
    directory.mkdir(parents=True, exist_ok=True)
    _ca("ca", directory)
    _ca("rogue-ca", directory)
    _signed("server", "/O=kraft tests/CN=localhost", "ca", directory, "DNS:localhost,IP:127.0.0.1")
    _signed("admin", "/O=kraft tests/OU=ops/CN=admin", "ca", directory)
    _signed("alice", "/O=kraft tests/OU=ops/CN=alice", "ca", directory)
    _signed("rogue", "/O=kraft tests/CN=admin", "rogue-ca", directory)
    _run("pkcs8", "-topk8", "-in", "server.key", "-out", "server-encrypted.key", "-v2", "aes-256-cbc",
         "-passout", f"pass:{KEY_PASSWORD}", cwd=directory)
    return Certs(directory)
