"""SCRAM (RFC 5802 / RFC 7677), the SASL state machines (KIP-43 / KIP-152),
JAAS and ``super.users`` parsing, and the listener settings built from
Kafka's keys -- no sockets here (see test_secure_listener.py)."""

from __future__ import annotations

import base64

import pytest

from kraft.messages.generated.sasl_authenticate_request import SaslAuthenticateRequest
from kraft.messages.generated.sasl_handshake_request import SaslHandshakeRequest
from kraft.messages.registry import message_class
from kraft.wire.errors import ErrorCode
from kraft.wire.sasl import SaslClient, SaslClientError, SaslServer
from kraft.wire.scram import ScramClient, ScramError, ScramMechanism, ScramServer, make_credential, salted_password
from kraft.wire.security import (
    PlainUsers,
    ScramCredentialStore,
    SecurityConfigError,
    SecurityProtocol,
    client_security_from_properties,
    listener_security,
    parse_jaas_config,
    parse_security_protocol_map,
    parse_super_users,
)

# RFC 7677 section 3: the SCRAM-SHA-256 example exchange.
RFC_CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_SERVER_FIRST = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
RFC_CLIENT_FINAL = (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
SHA256 = ScramMechanism.SCRAM_SHA_256
SHA512 = ScramMechanism.SCRAM_SHA_512


def rfc_server() -> ScramServer:
    credential = make_credential(SHA256, "pencil", salt=RFC_SALT)
    return ScramServer(SHA256, lambda user: credential if user == "user" else None, nonce=RFC_SERVER_NONCE)


def test_scram_client_produces_the_rfc_7677_exchange() -> None:
    client = ScramClient(SHA256, "user", "pencil", nonce=RFC_CLIENT_NONCE)
    assert client.first() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    assert client.final(RFC_SERVER_FIRST) == RFC_CLIENT_FINAL
    client.verify(RFC_SERVER_FINAL)
    assert client.complete


def test_scram_server_answers_the_rfc_7677_exchange() -> None:
    server = rfc_server()
    assert server.client_first(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO") == RFC_SERVER_FIRST
    assert server.client_final(RFC_CLIENT_FINAL) == RFC_SERVER_FINAL
    assert server.complete


def test_scram_server_refuses_a_nonce_that_does_not_end_with_its_own() -> None:
    server = rfc_server()
    server.client_first(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    forged = RFC_CLIENT_FINAL.replace(b"k0,p=", b"kX,p=")
    with pytest.raises(ScramError, match="invalid client nonce"):
        server.client_final(forged)
    assert not server.complete


def test_scram_server_refuses_a_wrong_proof_and_an_unknown_user() -> None:
    server = rfc_server()
    server.client_first(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    with pytest.raises(ScramError, match="invalid credentials"):
        server.client_final(RFC_CLIENT_FINAL.replace(b"p=dHzb", b"p=dHzc"))
    with pytest.raises(ScramError, match="unknown user"):
        rfc_server().client_first(b"n,,n=mallory,r=abc")


@pytest.mark.parametrize("first", [b"y,,n=user,r=abc", b"p=tls-unique,,n=user,r=abc", b"garbage", b"n,,r=abc",
                                   b"n,a=other,n=user,r=abc", b"n,,n=user,r=abc,m=ext", b"\xff\xfe"])
def test_scram_server_refuses_malformed_or_unsupported_client_first(first: bytes) -> None:
    with pytest.raises(ScramError):
        rfc_server().client_first(first)


def test_scram_client_refuses_a_server_that_does_not_know_the_credential() -> None:
    client = ScramClient(SHA256, "user", "pencil", nonce=RFC_CLIENT_NONCE)
    client.first()
    client.final(RFC_SERVER_FIRST)
    with pytest.raises(ScramError, match="signature"):
        client.verify(b"v=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")


def test_a_librdkafka_style_nonce_is_accepted_as_kafka_accepts_it() -> None:
    """Kafka checks the final nonce with endsWith; librdkafka releases send
    the client nonce in front of the combined one (and sign that text)."""
    credential = make_credential(SHA512, "secret")
    server = ScramServer(SHA512, lambda user: credential, nonce="SERVER")
    server_first = server.client_first(b"n,,n=admin,r=CLIENT").decode()
    assert server_first.startswith("r=CLIENTSERVER,")
    salted = salted_password(SHA512, "secret", credential.salt, credential.iterations)
    without_proof = "c=biws,r=CLIENTCLIENTSERVER"
    auth_message = f"n=admin,r=CLIENT,{server_first},{without_proof}".encode()
    client_key = SHA512.hmac(salted, b"Client Key")
    signature = SHA512.hmac(SHA512.hash(client_key), auth_message)
    proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature))).decode()
    assert server.client_final(f"{without_proof},p={proof}".encode()).startswith(b"v=")


# ---------------------------------------------------------------- SASL server


def scram_store(*users: tuple[str, str]) -> ScramCredentialStore:
    store = ScramCredentialStore()
    for user, password in users:
        store.set(user, make_credential(SHA512, password))
    return store


def test_sasl_server_authenticates_scram_and_names_the_principal() -> None:
    server = SaslServer(("SCRAM-SHA-512",), PlainUsers(), scram_store(("alice", "alice-secret")))
    assert server.handshake(1, SaslHandshakeRequest(mechanism="SCRAM-SHA-512")).response.error_code == 0
    client = SaslClient("SCRAM-SHA-512", "alice", "alice-secret")
    step = server.authenticate(2, SaslAuthenticateRequest(auth_bytes=client.first_token()))
    token = client.next_token(bytes(step.response.auth_bytes))
    assert token is not None
    step = server.authenticate(2, SaslAuthenticateRequest(auth_bytes=token))
    assert step.principal == "User:alice" and not step.close
    assert client.next_token(bytes(step.response.auth_bytes)) is None
    assert server.complete


def test_sasl_authenticate_before_handshake_is_an_illegal_state_and_closes() -> None:
    server = SaslServer(("PLAIN",), PlainUsers({"bob": "pw"}), ScramCredentialStore())
    step = server.authenticate(2, SaslAuthenticateRequest(auth_bytes=b"\x00bob\x00pw"))
    assert step.response.error_code == ErrorCode.ILLEGAL_SASL_STATE
    assert step.close and not server.complete


def test_sasl_unknown_mechanism_lists_the_enabled_ones_and_closes() -> None:
    server = SaslServer(("PLAIN", "SCRAM-SHA-512"), PlainUsers(), ScramCredentialStore())
    step = server.handshake(1, SaslHandshakeRequest(mechanism="GSSAPI"))
    assert step.response.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
    assert step.response.mechanisms == ["PLAIN", "SCRAM-SHA-512"]
    assert step.close


def test_sasl_handshake_v0_is_refused() -> None:
    server = SaslServer(("PLAIN",), PlainUsers(), ScramCredentialStore())
    step = server.handshake(0, SaslHandshakeRequest(mechanism="PLAIN"))
    assert step.response.error_code == ErrorCode.UNSUPPORTED_VERSION and step.close


@pytest.mark.parametrize("token", [b"\x00bob\x00wrong", b"\x00eve\x00pw", b"bob\x00pw", b"\x00bob\x00",
                                   b"other\x00bob\x00pw", b"\xff\x00\xfe\x00pw"])
def test_sasl_plain_failures_all_answer_the_same_and_close(token: bytes) -> None:
    server = SaslServer(("PLAIN",), PlainUsers({"bob": "pw"}), ScramCredentialStore())
    server.handshake(1, SaslHandshakeRequest(mechanism="PLAIN"))
    step = server.authenticate(2, SaslAuthenticateRequest(auth_bytes=token))
    assert step.response.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert step.response.error_message == ("Authentication failed during authentication due to invalid "
                                           "credentials with SASL mechanism PLAIN")
    assert step.close and step.principal is None


def test_plain_users_keep_no_passwords() -> None:
    users = PlainUsers({"bob": "bob-secret"})
    assert "bob-secret" not in repr(vars(users)) and users.verify("bob", "bob-secret")
    assert not users.verify("bob", "bob-secreT") and not users.verify("nobody", "bob-secret")


def test_sasl_client_refuses_a_forged_server_final() -> None:
    client = SaslClient("SCRAM-SHA-256", "user", "pencil")
    client.first_token()
    with pytest.raises(SaslClientError):
        client.next_token(b"r=not-our-nonce,s=QSXCR+Q6sek8bf92,i=4096")


# ---------------------------------------------------------------- configuration


def test_jaas_config_is_parsed_as_kafka_parses_it() -> None:
    module = parse_jaas_config('org.apache.kafka.common.security.plain.PlainLoginModule required '
                               'username="admin" password="a \\"quoted\\" secret" user_bob=bob-secret;')
    assert module.class_name.endswith("PlainLoginModule") and module.flag == "required"
    assert module.options == {"username": "admin", "password": 'a "quoted" secret', "user_bob": "bob-secret"}


@pytest.mark.parametrize("text", ["", "Module", "Module required", "Module always;", "Module required a=;",
                                  "Module required a=b", "A required; B required;", 'Module required a="x;'])
def test_bad_jaas_config_is_a_typed_error(text: str) -> None:
    with pytest.raises(SecurityConfigError):
        parse_jaas_config(text)


def test_super_users_and_protocol_map() -> None:
    assert parse_super_users("User:admin; User:CN=node,O=x") == {"User:admin", "User:CN=node,O=x"}
    with pytest.raises(SecurityConfigError):
        parse_super_users("admin")
    assert parse_security_protocol_map("CONTROLLER:SASL_SSL,external:ssl") == {
        "CONTROLLER": SecurityProtocol.SASL_SSL, "EXTERNAL": SecurityProtocol.SSL}
    with pytest.raises(SecurityConfigError, match="unknown security protocol"):
        parse_security_protocol_map("CONTROLLER:TLS")


def test_a_sasl_listener_needs_supported_mechanisms() -> None:
    with pytest.raises(SecurityConfigError, match="GSSAPI is not supported"):
        listener_security({}, "CONTROLLER", SecurityProtocol.SASL_PLAINTEXT, ScramCredentialStore())
    with pytest.raises(SecurityConfigError, match="plain.sasl.jaas.config"):
        listener_security({"sasl.enabled.mechanisms": "PLAIN"}, "CONTROLLER", SecurityProtocol.SASL_PLAINTEXT,
                          ScramCredentialStore())
    security = listener_security({"listener.name.controller.sasl.enabled.mechanisms": "scram-sha-256"},
                                 "CONTROLLER", SecurityProtocol.SASL_PLAINTEXT, ScramCredentialStore())
    assert security.mechanisms == ("SCRAM-SHA-256",)


def test_an_ssl_listener_needs_a_pem_keystore() -> None:
    with pytest.raises(SecurityConfigError, match="ssl.keystore.location"):
        listener_security({}, "CONTROLLER", SecurityProtocol.SSL, ScramCredentialStore())
    with pytest.raises(SecurityConfigError, match="PEM keystores only"):
        listener_security({"ssl.keystore.location": "/etc/hosts"}, "CONTROLLER", SecurityProtocol.SSL,
                          ScramCredentialStore())
    with pytest.raises(SecurityConfigError, match="TLSv1.2 and TLSv1.3 only"):
        client_security_from_properties({"security.protocol": "SSL", "ssl.enabled.protocols": "TLSv1.1"})


def test_client_properties_for_sasl() -> None:
    security = client_security_from_properties({
        "security.protocol": "sasl_plaintext", "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required '
                            'username="alice" password="alice-secret";'})
    assert (security.protocol, security.mechanism, security.username) == (
        SecurityProtocol.SASL_PLAINTEXT, "SCRAM-SHA-512", "alice")
    assert "alice-secret" not in repr(security)
    with pytest.raises(SecurityConfigError, match="needs ScramLoginModule"):
        client_security_from_properties({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
                                         "sasl.jaas.config": 'x.PlainLoginModule required username="a" password="b";'})


def test_scram_store_follows_metadata_records() -> None:
    store = ScramCredentialStore()
    credential = make_credential(SHA512, "pw")
    record = message_class("UserScramCredentialRecord")(
        name="alice", mechanism=2, salt=credential.salt, stored_key=credential.stored_key,
        server_key=credential.server_key, iterations=credential.iterations)
    assert store.apply_record(record)
    assert store.get(SHA512, "alice") == credential
    assert store.apply_record(message_class("RemoveUserScramCredentialRecord")(name="alice", mechanism=2))
    assert store.get(SHA512, "alice") is None
    assert not store.apply_record(message_class("FeatureLevelRecord")(name="x", feature_level=1))
