"""Secure quorums as real processes on 127.0.0.1: three voters and an
observer over SASL_SSL with SCRAM-SHA-512 (accounts from ``kraft storage
format --add-scram``), and over SSL with client certificates required.
The real tools (``kraft quorum``, ``kraft observe``), kafka-python's admin
client and ``kcat`` (librdkafka) describe the quorum with matching
settings; wrong credentials, a rogue certificate and a non-super user are
refused. Certificates are made by the test with the openssl command."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness import cli
from tests.harness.configs import CLUSTER_ID, make_configs, write_properties
from tests.harness.processes import ProcessCluster, start_processes
from tests.test_readme import delegated_blocks, readme_block, run_example
from tests.wire.certs import Certs, make_certs, require_openssl

pytestmark = pytest.mark.slow

VOTERS = [1, 2, 3]
SCRAM_JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="{}" password="{}";'
ACCOUNTS = {"controller": "controller-secret", "admin": "admin-secret", "alice": "alice-secret"}
ADMIN_DN = "CN=admin,OU=ops,O=kraft tests"
NODE_DN = "CN=localhost,O=kraft tests"


def start_cluster(root: Path, extra: dict[str, str], format_args: list[str]) -> ProcessCluster:
    # DEBUG: the tests read who authenticated and who asked (per-connection
    # and per-request lines are DEBUG; INFO is for state changes).
    return start_processes(root, make_configs(root, VOTERS, extra=extra, format_args=format_args), append_rate=20,
                           log_level="DEBUG")


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    require_openssl()
    return make_certs(tmp_path_factory.mktemp("certs"))


# ---------------------------------------------------------------- SASL_SSL + SCRAM-SHA-512


#: ``kraft storage format`` arguments that store every account of ACCOUNTS.
SCRAM_FORMAT_ARGS = [arg for user, password in ACCOUNTS.items()
                     for arg in ("--add-scram", f"SCRAM-SHA-512=[name={user},password={password}]")]


def sasl_ssl_properties(certs: Certs) -> dict[str, str]:
    """A SASL_SSL controller listener with SCRAM-SHA-512, voters
    authenticating as ``controller``, ``controller`` and ``admin`` super users."""
    return {
        "listener.security.protocol.map": "CONTROLLER:SASL_SSL",
        "sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "sasl.mechanism.controller.protocol": "SCRAM-SHA-512",
        "listener.name.controller.scram-sha-512.sasl.jaas.config": SCRAM_JAAS.format(
            "controller", ACCOUNTS["controller"]),
        **certs.server_props(),
        "super.users": "User:controller;User:admin",
    }


@pytest.fixture(scope="module")
def sasl_cluster(tmp_path_factory: pytest.TempPathFactory, certs: Certs) -> Iterator[ProcessCluster]:
    root = tmp_path_factory.mktemp("sasl-ssl")
    cluster = start_cluster(root, sasl_ssl_properties(certs), SCRAM_FORMAT_ARGS)
    try:
        yield cluster
    finally:
        cluster.stop()


def sasl_client_props(certs: Certs, user: str, password: str) -> dict[str, str]:
    return {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": SCRAM_JAAS.format(user, password), **certs.client_props()}


def test_sasl_ssl_quorum_commits_and_the_quorum_tool_describes_it(sasl_cluster: ProcessCluster, certs: Certs) -> None:
    admin = write_properties(sasl_cluster.root / "admin.properties",
                             sasl_client_props(certs, "admin", ACCOUNTS["admin"]))
    first = sasl_cluster.wait_for_status(admin)
    assert int(first["LeaderId"]) in VOTERS
    assert sorted(v["id"] for v in json.loads(first["CurrentVoters"])) == VOTERS
    # The quorum keeps committing (the demo writer appends on the leader).
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        later = sasl_cluster.wait_for_status(admin)
        if int(later["HighWatermark"]) > int(first["HighWatermark"]):
            break
    else:
        raise AssertionError("the high watermark did not move")
    # Every voter authenticated its peers as the controller account, and
    # logged the admin's principal for its requests.
    logs = "".join(n.output() for n in sasl_cluster.nodes.values())
    assert "authenticated as User:controller with SCRAM-SHA-512" in logs
    assert "as User:admin" in logs


def test_the_readme_security_transcript_runs_against_the_sasl_ssl_quorum(
        sasl_cluster: ProcessCluster, certs: Certs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """README.md's SASL_SSL block as written, with this test's files for its
    placeholders: ``server.properties`` is a fifth node (a broker) of this
    cluster's config (a directory of its own, so the format is real),
    ``admin.properties`` the admin's client file, ``127.0.0.1:9093`` the quorum."""
    [line] = [at for at, test in delegated_blocks().items() if test == "tests/node/test_secure_cluster.py"]
    config = sasl_cluster.root / "server-1.properties"
    fresh = tmp_path / "server.properties"
    fresh.write_text("".join(
        "node.id=5\n" if entry.startswith("node.id=") else
        # Not among the static voters: a broker, as Kafka requires (KafkaConfig.validateValues).
        "process.roles=broker\n" if entry.startswith("process.roles=") else
        f"metadata.log.dir={tmp_path / 'node-5'}\n" if entry.startswith("metadata.log.dir=") else entry + "\n"
        for entry in config.read_text().splitlines()))
    admin = write_properties(tmp_path / "admin.properties",
                             sasl_client_props(certs, "admin", ACCOUNTS["admin"]))
    sasl_cluster.wait_for_status(admin)
    monkeypatch.setenv("CLUSTER_ID", CLUSTER_ID)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))  # the observer's default --data-dir

    def adapt(command: str) -> str:
        command = command.replace("-c server.properties", f"-c {fresh}").replace(
            "admin.properties", str(admin)).replace("127.0.0.1:9093", sasl_cluster.bootstrap)
        return command + " --timeout 60" if command.startswith("kraft observe") else command

    (tmp_path / "readme").mkdir()
    out = run_example("console", readme_block(line), tmp_path / "readme", adapt=adapt)
    assert "LeaderId:" in out and CLUSTER_ID in out
    assert (tmp_path / "node-5" / "meta.properties").exists()


def test_observer_follows_a_sasl_ssl_quorum(sasl_cluster: ProcessCluster, certs: Certs, tmp_path: Path) -> None:
    admin = write_properties(tmp_path / "admin.properties",
                             sasl_client_props(certs, "admin", ACCOUNTS["admin"]))
    sasl_cluster.wait_for_status(admin)
    result = cli.run("observe", "--bootstrap-controller", sasl_cluster.bootstrap, "--command-config", str(admin),
                     "--data-dir", str(tmp_path / "observer"), "--timeout", "60", "--format", "json", timeout=120)
    assert result.returncode == 0, result.stderr
    assert CLUSTER_ID in result.stdout
    logs = "".join(n.output() for n in sasl_cluster.nodes.values())
    assert "DescribeCluster" in logs and "as User:admin" in logs


def test_kafka_python_admin_describes_the_sasl_ssl_quorum(
        sasl_cluster: ProcessCluster, certs: Certs, tmp_path: Path) -> None:
    from kafka import KafkaAdminClient

    sasl_cluster.wait_for_status(write_properties(
        tmp_path / "admin.properties", sasl_client_props(certs, "admin", ACCOUNTS["admin"])))
    admin = KafkaAdminClient(bootstrap_servers=sasl_cluster.bootstrap.split(","), security_protocol="SASL_SSL",
                             sasl_mechanism="SCRAM-SHA-512", sasl_plain_username="admin",
                             sasl_plain_password=ACCOUNTS["admin"], ssl_cafile=str(certs.truststore),
                             bootstrap_timeout_ms=20_000, request_timeout_ms=10_000)
    try:
        quorum = admin.describe_metadata_quorum()
    finally:
        admin.close()
    partition = quorum["topics"][0]["partitions"][0]
    assert partition["leader_id"] in VOTERS
    assert sorted(v["replica_id"] for v in partition["current_voters"]) == VOTERS


def test_kafka_python_with_a_wrong_password_is_refused(
        sasl_cluster: ProcessCluster, certs: Certs, tmp_path: Path) -> None:
    from kafka import KafkaAdminClient
    from kafka.errors import KafkaError

    # Up first, so the refusal is the password's, not a cluster still starting.
    sasl_cluster.wait_for_status(write_properties(
        tmp_path / "admin.properties", sasl_client_props(certs, "admin", ACCOUNTS["admin"])))
    with pytest.raises(KafkaError):
        admin = KafkaAdminClient(bootstrap_servers=sasl_cluster.bootstrap.split(","), security_protocol="SASL_SSL",
                                 sasl_mechanism="SCRAM-SHA-512", sasl_plain_username="admin",
                                 sasl_plain_password="wrong", ssl_cafile=str(certs.truststore),
                                 bootstrap_timeout_ms=5_000, request_timeout_ms=5_000)
        admin.close()


def kcat(*args: str) -> subprocess.CompletedProcess[str]:
    path = shutil.which("kcat")
    if path is None:
        pytest.skip("kcat is not installed")
    return subprocess.run([path, *args], capture_output=True, text=True, timeout=60)


def test_kcat_lists_the_sasl_ssl_quorum_and_refuses_a_wrong_password(
        sasl_cluster: ProcessCluster, certs: Certs, tmp_path: Path) -> None:
    sasl_cluster.wait_for_status(write_properties(
        tmp_path / "admin.properties", sasl_client_props(certs, "admin", ACCOUNTS["admin"])))
    common = ["-b", sasl_cluster.bootstrap, "-X", "security.protocol=sasl_ssl", "-X", "sasl.mechanisms=SCRAM-SHA-512",
              "-X", f"ssl.ca.location={certs.truststore}", "-L", "-m", "15"]
    good = kcat(*common, "-X", "sasl.username=admin", "-X", f"sasl.password={ACCOUNTS['admin']}")
    assert good.returncode == 0, good.stderr
    assert "1 brokers:" in good.stdout
    bad = kcat(*common, "-m", "5", "-X", "sasl.username=admin", "-X", "sasl.password=wrong")
    assert bad.returncode != 0
    assert "Authentication failed" in bad.stderr or "SASL" in bad.stderr


def test_wrong_credentials_are_refused_by_the_quorum_tool(
        sasl_cluster: ProcessCluster, certs: Certs, tmp_path: Path) -> None:
    # Up first (tests of a module may run in any order).
    sasl_cluster.wait_for_status(write_properties(
        tmp_path / "admin.properties", sasl_client_props(certs, "admin", ACCOUNTS["admin"])))
    wrong = write_properties(tmp_path / "wrong.properties",
                             {**sasl_client_props(certs, "admin", "not-the-password"),
                              "default.api.timeout.ms": "5000"})
    result = sasl_cluster.describe_status(wrong)
    assert result.returncode != 0
    assert "SASL_AUTHENTICATION_FAILED" in result.stderr
    unknown = write_properties(tmp_path / "unknown.properties",
                               {**sasl_client_props(certs, "mallory", "x"),
                                "default.api.timeout.ms": "5000"})
    assert "SASL_AUTHENTICATION_FAILED" in sasl_cluster.describe_status(unknown).stderr
    logs = "".join(n.output() for n in sasl_cluster.nodes.values())
    assert "SCRAM-SHA-512 authentication failed for user 'admin'" in logs
    assert "unknown user 'mallory'" in logs


def test_a_quorum_change_by_a_non_super_user_is_refused(
        sasl_cluster: ProcessCluster, certs: Certs, tmp_path: Path) -> None:
    admin = write_properties(tmp_path / "admin.properties",
                             sasl_client_props(certs, "admin", ACCOUNTS["admin"]))
    sasl_cluster.wait_for_status(admin)
    alice = write_properties(tmp_path / "alice.properties",
                             {**sasl_client_props(certs, "alice", ACCOUNTS["alice"]),
                              "default.api.timeout.ms": "10000"})
    # alice may read ...
    assert sasl_cluster.describe_status(alice).returncode == 0
    # ... but not change the voters.
    result = cli.run("quorum", "--bootstrap-controller", sasl_cluster.bootstrap, "--command-config", str(alice),
                     "remove-controller", "--controller-id", "3", "--controller-directory-id", "AAAAAAAAAAAAAAAAAAAAAA",
                     timeout=60)
    assert result.returncode != 0
    assert "CLUSTER_AUTHORIZATION_FAILED" in result.stderr or "Cluster authorization failed" in result.stderr
    logs = "".join(n.output() for n in sasl_cluster.nodes.values())
    assert "as User:alice: denied, not a super user" in logs


# ---------------------------------------------------------------- SSL with client certificates


@pytest.fixture(scope="module")
def ssl_cluster(tmp_path_factory: pytest.TempPathFactory, certs: Certs) -> Iterator[ProcessCluster]:
    root = tmp_path_factory.mktemp("ssl")
    extra = {
        "listener.security.protocol.map": "CONTROLLER:SSL",
        **certs.server_props(client_auth="required"),
        "super.users": f"User:{NODE_DN};User:{ADMIN_DN}",
    }
    cluster = start_cluster(root, extra, [])
    try:
        yield cluster
    finally:
        cluster.stop()


def test_ssl_quorum_with_client_auth_serves_the_tools(
        ssl_cluster: ProcessCluster, certs: Certs, tmp_path: Path) -> None:
    admin = write_properties(tmp_path / "admin.properties",
                             {"security.protocol": "SSL", **certs.client_props("admin")})
    status = ssl_cluster.wait_for_status(admin)
    assert int(status["LeaderId"]) in VOTERS
    logs = "".join(n.output() for n in ssl_cluster.nodes.values())
    assert f"authenticated as User:{NODE_DN}" in logs  # the voters, by their certificates
    assert f"as User:{ADMIN_DN}" in logs
    observed = cli.run("observe", "--bootstrap-controller", ssl_cluster.bootstrap, "--command-config", str(admin),
                       "--data-dir", str(tmp_path / "observer"), "--timeout", "60", timeout=120)
    assert observed.returncode == 0, observed.stderr

    from kafka import KafkaAdminClient

    client = KafkaAdminClient(bootstrap_servers=ssl_cluster.bootstrap.split(","), security_protocol="SSL",
                              ssl_cafile=str(certs.truststore),
                              ssl_certfile=str(certs.cert("admin")),
                              ssl_keyfile=str(certs.key("admin")),
                              bootstrap_timeout_ms=20_000, request_timeout_ms=10_000)
    try:
        quorum = client.describe_metadata_quorum()
    finally:
        client.close()
    assert any(str(v) in repr(quorum) for v in VOTERS)

    listed = kcat("-b", ssl_cluster.bootstrap, "-X", "security.protocol=ssl",
                  "-X", f"ssl.ca.location={certs.truststore}",
                  "-X", f"ssl.certificate.location={certs.cert('admin')}",
                  "-X", f"ssl.key.location={certs.key('admin')}", "-L", "-m", "15")
    assert listed.returncode == 0, listed.stderr
    assert "1 brokers:" in listed.stdout


def test_ssl_quorum_refuses_missing_and_rogue_certificates(
        ssl_cluster: ProcessCluster, certs: Certs, tmp_path: Path) -> None:
    admin = write_properties(tmp_path / "admin.properties",
                             {"security.protocol": "SSL", **certs.client_props("admin")})
    ssl_cluster.wait_for_status(admin)
    for name, props in [("none", certs.client_props()),
                        ("rogue", certs.client_props("rogue"))]:
        config = write_properties(tmp_path / f"{name}.properties",
                                  {"security.protocol": "SSL", "default.api.timeout.ms": "5000", **props})
        result = ssl_cluster.describe_status(config)
        assert result.returncode != 0, name
    logs = "".join(n.output() for n in ssl_cluster.nodes.values())
    assert "TLS handshake failed" in logs
