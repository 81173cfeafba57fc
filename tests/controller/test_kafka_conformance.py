"""The controller's tables against the real Kafka 4.4 jars: small Java
programs (compiled here against the release's jars) ask Kafka's own
``LogConfig.validate``, ``QuorumFeatures.defaultSupportedFeatureMap``,
``Feature.PRODUCTION_FEATURES``, ``CidrUtils.validate`` and
``ConfigurationControlManager.incrementalAlterConfigs`` (with
``ControllerConfigurationValidator`` and the broker and topic config
schemas), and the answers must be kraft's."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

import uuid

from kraft.controller.acls import create_acls, delete_acls, validate_host_pattern
from kraft.controller.quotas import alter_client_quotas
from kraft.controller.scram_control import alter_user_scram_credentials
from kraft.messages.generated.alter_user_scram_credentials_request import (
    AlterUserScramCredentialsRequest,
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
)
from kraft.messages.generated.user_scram_credential_record import UserScramCredentialRecord
from kraft.image.model import MetadataImage
from kraft.messages.generated import client_quota_record as cq
from kraft.messages.generated.access_control_entry_record import AccessControlEntryRecord
from kraft.messages.generated.alter_client_quotas_request import AlterClientQuotasRequest, EntityData, EntryData, OpData
from kraft.messages.generated.create_acls_request import AclCreation, CreateAclsRequest
from kraft.messages.generated.delete_acls_request import DeleteAclsFilter, DeleteAclsRequest
from kraft.controller.configs import alter_configs, incremental_alter_configs
from kraft.controller.settings import ControllerSettings
from kraft.controller.feature_control import (
    FEATURES,
    KraftVersionUpgrade,
    controller_supported_features,
    update_features,
)
from kraft.controller.topic_configs import TOPIC_CONFIGS, validate_topic_configs
from kraft.messages.generated import alter_configs_request as legacy
from kraft.messages.generated import incremental_alter_configs_request as inc
from kraft.messages.generated.config_record import ConfigRecord
from kraft.messages.generated.feature_level_record import FeatureLevelRecord
from kraft.messages.generated.update_features_request import FeatureUpdateKey, UpdateFeaturesRequest
from kraft.messages.generated.topic_record import TopicRecord
from tests.controller.images import broker, features, replay
from tests.kafka.releases import KafkaRelease, require, unavailable

ALL = controller_supported_features()

#: One case per line: tab-separated key=value pairs of one topic's configs.
TOPIC_CASES = [
    {"segment.bytes": "abc"}, {"segment.bytes": "5"}, {"segment.bytes": "99999999999"}, {"segment.bytes": " 2000000 "},
    {"segment.ms": "0"}, {"retention.ms": "-2"}, {"retention.bytes": ""}, {"flush.ms": "1.5"},
    {"cleanup.policy": "foo"}, {"cleanup.policy": "compact,,delete"}, {"cleanup.policy": ""},
    {"cleanup.policy": "compact, delete"}, {"compression.type": "zip"}, {"compression.type": "ZSTD"},
    {"compression.gzip.level": "0"}, {"compression.gzip.level": "-1"}, {"compression.zstd.level": "-131073"},
    {"compression.lz4.level": "18"}, {"min.cleanable.dirty.ratio": "2"}, {"min.cleanable.dirty.ratio": "-0.5"},
    {"min.cleanable.dirty.ratio": "x"}, {"min.cleanable.dirty.ratio": "1e-1"},
    {"unclean.leader.election.enable": "yes"}, {"unclean.leader.election.enable": "TRUE"},
    {"leader.replication.throttled.replicas": "x"}, {"leader.replication.throttled.replicas": "*"},
    {"follower.replication.throttled.replicas": "0:1, 1:2"}, {"message.timestamp.type": "x"},
    {"max.decompressed.message.bytes": "0"}, {"max.decompressed.message.bytes": "2147483640"},
    {"min.insync.replicas": "0"}, {"remote.storage.enable": "true"}, {"local.retention.ms": "-3"},
    {"foo.bar": "1"}, {"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"},
    {"segment.bytes": "x", "foo": "1"}, {"segment.bytes": "x", "retention.ms": "x"},
    {"retention.ms": "x", "segment.bytes": "x"}, {"internal.segment.bytes": "1"},
]
CIDR_CASES = ["10.0.0.0/8", "10.0.0.0/33", "10.0.0/8", "abc/8", "::1/128", "::1/129", "fe80::/10", "10.0.0.0/",
              "256.0.0.0/8", "zz::/64", "::1/abc", "10.0.0.0/100", "010.0.0.0/8"]

_PROBE = r"""
import java.io.*;
import java.util.*;
import org.apache.kafka.controller.QuorumFeatures;
import org.apache.kafka.server.authorizer.internals.CidrUtils;
import org.apache.kafka.storage.internals.log.LogConfig;

public class KraftProbe {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        new TreeMap<>(QuorumFeatures.defaultSupportedFeatureMap(false)).forEach((k, v) ->
            System.out.println("feature\t" + k + "\t" + v.min() + "\t" + v.max()));
        for (org.apache.kafka.server.common.Feature f : org.apache.kafka.server.common.Feature.PRODUCTION_FEATURES) {
            StringBuilder b = new StringBuilder("levels\t" + f.featureName() + "\t" + f.latestProduction());
            for (org.apache.kafka.server.common.FeatureVersion v : f.featureVersions()) {
                b.append("\t").append(v.featureLevel()).append(":").append(v.bootstrapMetadataVersion().featureLevel())
                    .append(":").append(new TreeMap<>(v.dependencies()));
            }
            System.out.println(b);
        }
        String line;
        while ((line = in.readLine()) != null) {
            String[] parts = line.split("\t", -1);
            try {
                if (parts[0].equals("cidr")) {
                    CidrUtils.validate(parts[1]);
                } else {
                    Map<String, String> configs = new LinkedHashMap<>();
                    for (int i = 1; i < parts.length; i++) {
                        int eq = parts[i].indexOf('=');
                        configs.put(parts[i].substring(0, eq), parts[i].substring(eq + 1));
                    }
                    LogConfig.validate(Map.of(), new HashMap<>(configs), Map.of("preallocate", false), false);
                }
                System.out.println("OK");
            } catch (Exception e) {
                System.out.println("ERROR\t" + e.getMessage());
            }
        }
    }
}
"""


#: ConfigurationControlManager.incrementalAlterConfigs on a controller (node 3000, metadata.version 33)
#: holding topic "t" (retention.ms=100) and broker 1 (log.retention.ms=5); a package-private API,
#: so the probe sits in Kafka's package.
_CONFIG_PROBE = r"""package org.apache.kafka.controller;

import java.io.*;
import java.util.*;
import org.apache.kafka.clients.admin.AlterConfigOp.OpType;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.*;
import org.apache.kafka.common.metadata.ConfigRecord;
import org.apache.kafka.common.metadata.FeatureLevelRecord;
import org.apache.kafka.metadata.KafkaConfigSchema;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.server.config.ServerTopicConfigSynonyms;
import org.apache.kafka.storage.internals.log.LogConfig;

public class KraftConfigProbe {
    public static void main(String[] args) throws Exception {
        FeatureControlManager features = new FeatureControlManager.Builder().build();
        features.replay(new FeatureLevelRecord().setName("metadata.version").setFeatureLevel((short) 33));
        KafkaConfigSchema schema = new KafkaConfigSchema(Map.of(
            ConfigResource.Type.BROKER, new ConfigDef(kafka.server.KafkaConfig.configDef()),
            ConfigResource.Type.TOPIC, LogConfig.configDefCopy()), ServerTopicConfigSynonyms.ALL_TOPIC_CONFIG_SYNONYMS);
        Properties props = new Properties();
        props.put("process.roles", "controller");
        props.put("node.id", "3000");
        props.put("controller.quorum.voters", "3000@localhost:9093");
        props.put("controller.listener.names", "CONTROLLER");
        props.put("listeners", "CONTROLLER://:9093");
        props.put("log.dirs", "/tmp/unused");
        kafka.server.KafkaConfig config = kafka.server.KafkaConfig.fromProps(props);
        // The second manager runs with ELR enabled (eligible.leader.replicas.version=1).
        FeatureControlManager elrFeatures = new FeatureControlManager.Builder()
            .setQuorumFeatures(new QuorumFeatures(3000, QuorumFeatures.defaultSupportedFeatureMap(false), List.of(3000)))
            .build();
        elrFeatures.replay(new FeatureLevelRecord().setName("metadata.version").setFeatureLevel((short) 33));
        elrFeatures.replay(new FeatureLevelRecord().setName("eligible.leader.replicas.version").setFeatureLevel((short) 1));
        ConfigurationControlManager[] managers = new ConfigurationControlManager[2];
        FeatureControlManager[] featureControls = {features, elrFeatures};
        for (int m = 0; m < 2; m++) {
            managers[m] = new ConfigurationControlManager.Builder()
                .setKafkaConfigSchema(schema)
                .setValidator(new kafka.server.ControllerConfigurationValidator(config))
                .setFeatureControl(featureControls[m])
                .setNodeId(3000)
                .setExistenceChecker(r -> {
                    if (r.type() == ConfigResource.Type.TOPIC && !r.name().equals("t"))
                        throw new UnknownTopicOrPartitionException("The topic '" + r.name() + "' does not exist.");
                    if (r.type() == ConfigResource.Type.BROKER && !r.name().isEmpty()
                            && !Set.of("1", "3000").contains(r.name()))
                        throw new BrokerIdNotRegisteredException("No node with id " + r.name() + " found.");
                })
                .build();
            managers[m].replay(new ConfigRecord().setResourceType((byte) 2).setResourceName("t").setName("retention.ms").setValue("100"));
            managers[m].replay(new ConfigRecord().setResourceType((byte) 4).setResourceName("1").setName("log.retention.ms").setValue("5"));
        }
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        String line;
        while ((line = in.readLine()) != null) {
            // type \t name \t key=op=value ...  (value <null> = null)
            boolean elr = line.startsWith("elr\t");
            ConfigurationControlManager manager = managers[elr ? 1 : 0];
            String[] parts = (elr ? line.substring(4) : line).split("\t", -1);
            ConfigResource resource = new ConfigResource(ConfigResource.Type.forId(Byte.parseByte(parts[0])), parts[1]);
            Map<String, Map.Entry<OpType, String>> ops = new HashMap<>();
            Map<String, String> legacyConfigs = new HashMap<>();
            boolean legacy = false;
            for (int i = 2; i < parts.length; i++) {
                String[] kov = parts[i].split("=", 3);
                String value = kov[2].equals("<null>") ? null : kov[2];
                legacy = kov[1].equals("9");  // op 9: a legacy AlterConfigs request
                legacyConfigs.put(kov[0], value);
                if (!legacy) ops.put(kov[0], new AbstractMap.SimpleEntry<>(OpType.forId(Byte.parseByte(kov[1])), value));
            }
            ControllerResult<Map<ConfigResource, org.apache.kafka.common.requests.ApiError>> result = legacy
                ? manager.legacyAlterConfigs(Map.of(resource, legacyConfigs), false, false)
                : manager.incrementalAlterConfigs(Map.of(resource, ops), false, false);
            StringBuilder b = new StringBuilder();
            org.apache.kafka.common.requests.ApiError e = result.response().get(resource);
            b.append(e.error().code()).append("|").append(e.message());
            for (ApiMessageAndVersion r : result.records()) {
                if (r.message() instanceof ConfigRecord c) b.append("|").append(c.name()).append("=").append(c.value());
                else b.append("|ClearElr:").append(((org.apache.kafka.common.metadata.ClearElrRecord) r.message()).topicName());
            }
            System.out.println(b);
        }
    }
}
"""


def _probe(release: KafkaRelease, tmp: Path, source: str, main: str, lines: list[str]) -> list[str]:
    javac = shutil.which("javac")
    if javac is None:
        unavailable("no javac on PATH (bash .ci/deps installs a JDK)")
    path = tmp / (main.rsplit(".", 1)[-1] + ".java")
    path.write_text(source)
    subprocess.run([javac, "-cp", release.classpath, "-d", str(tmp), str(path)], check=True, capture_output=True)
    out = subprocess.run(["java", "-cp", f"{release.classpath}:{tmp}", main], input="\n".join(lines) + "\n",
                         check=True, capture_output=True, text=True, encoding="utf-8", timeout=300)
    return [line for line in out.stdout.splitlines() if not line.startswith("SLF4J")]


@pytest.fixture(scope="module")
def kafka_answers(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    release = require("4.4.0")
    lines = ["topic\t" + "\t".join(f"{k}={v}" for k, v in case.items()) for case in TOPIC_CASES]
    lines += [f"cidr\t{c}" for c in CIDR_CASES]
    return _probe(release, tmp_path_factory.mktemp("probe"), _PROBE, "KraftProbe", lines)


def test_supported_features_are_kafkas(kafka_answers: list[str]) -> None:
    # QuorumFeatures.defaultSupportedFeatureMap(false) of Kafka 4.4.0.
    theirs = {f[1]: (int(f[2]), int(f[3])) for f in (a.split("\t") for a in kafka_answers) if f[0] == "feature"}
    assert controller_supported_features() == theirs


def test_feature_levels_are_kafkas(kafka_answers: list[str]) -> None:
    # Feature.PRODUCTION_FEATURES: each FeatureVersion's level, bootstrapMetadataVersion and dependencies.
    theirs = [a.split("\t")[1:] for a in kafka_answers if a.startswith("levels\t")]
    ours = [[f.name, str(f.latest_production),
             *(f"{v.level}:{v.bootstrap_metadata_version}:{{{', '.join(f'{k}={d}' for k, d in sorted(v.dependencies.items()))}}}"
               for v in f.levels)] for f in FEATURES]
    assert ours == theirs


def test_topic_config_validation_is_kafkas(kafka_answers: list[str]) -> None:
    # LogConfig.validate as ControllerConfigurationValidator calls it (broker defaults given).
    answers = [a for a in kafka_answers if not a.startswith(("feature\t", "levels\t"))][:len(TOPIC_CASES)]
    ours = []
    for case in TOPIC_CASES:
        error = validate_topic_configs(case)
        ours.append("OK" if error is None else f"ERROR\t{error.message}")
    assert ours == answers


def test_topic_config_names_are_kafkas(kafka_answers: list[str]) -> None:
    # LogConfig.configNames: every name kraft knows is accepted (no "Unknown topic config name").
    assert "internal.segment.bytes" in TOPIC_CONFIGS and len(TOPIC_CONFIGS) == 38


def test_cidr_validation_is_kafkas(kafka_answers: list[str]) -> None:
    # AclControlManager.validateHostPattern wraps CidrUtils.validate's message.
    answers = [a for a in kafka_answers if not a.startswith(("feature\t", "levels\t"))][len(TOPIC_CASES):]
    ours = []
    for host in CIDR_CASES:
        error = validate_host_pattern(host, True)
        prefix = f"Invalid CIDR notation '{host}': "
        ours.append("OK" if error is None else "ERROR\t" + str(error.message).removeprefix(prefix))
    assert ours == answers


#: (resource type, name, [(key, op, value)]) as IncrementalAlterConfigs carries them.
CONFIG_CASES: list[tuple[int, str, list[tuple[str, int, str | None]]]] = [
    (2, "t", [("segment.bytes", 0, "2000000"), ("retention.ms", 1, None)]),
    (2, "t", [("cleanup.policy", 2, "compact")]), (2, "t", [("cleanup.policy", 3, "delete")]),
    (2, "t", [("cleanup.policy", 2, "compact,delete,")]), (2, "t", [("retention.ms", 2, "1")]),
    (2, "t", [("retention.ms", 0, "100")]), (2, "t", [("foo", 0, "1")]), (2, "t", [("segment.bytes", 1, None)]),
    (2, "nope", [("segment.bytes", 0, "x")]), (2, "nope", [("segment.bytes", 0, "2000000")]),
    (2, "", [("segment.bytes", 0, "2000000")]), (2, "a b", [("segment.bytes", 0, "2000000")]),
    (2, "t", [("a", 0, "1"), ("b", 0, "2"), ("segment.ms", 0, "x")]),
    (4, "1", [("log.retention.ms", 0, "5")]), (4, "1", [("log.retention.ms", 1, None)]), (4, "b", [("x", 0, "1")]),
    (4, "-1", [("x", 0, "1")]), (4, "9", [("x", 0, "1")]), (4, "3000", [("x", 0, "1")]),
    (4, "", [("listeners", 2, "FOO://:1")]), (4, "", [("log.dirs", 2, "/a")]), (4, "", [("x", 2, "a")]),
    (4, "1", [("cordoned.log.dirs", 0, "/a")]), (4, "", [("x", 0, "a" * 32768)]),
    (16, "s", [("metrics", 2, "a")]), (16, "", [("metrics", 0, "a")]), (16, "s", [("bogus", 0, "a")]),
    (16, "s", [("metrics", 0, "a"), ("interval.ms", 0, "1000")]),
    (32, "g", [("consumer.session.timeout.ms", 0, "0")]), (32, "g", [("bogus", 0, "1")]),
    (32, "", [("consumer.session.timeout.ms", 0, "1000")]), (32, "g", [("share.isolation.level", 0, "x")]),
    (2, "t", [("segment.bytes", 9, "2000000")]), (2, "t", [("retention.ms", 9, "100")]),
    (2, "t", [("segment.bytes", 9, "x")]), (4, "1", [("log.retention.ms", 9, "6"), ("x", 9, "1")]),
    (4, "1", [("a", 9, "1")]), (8, "3000", [("root", 9, "DEBUG")]), (2, "nope", [("segment.bytes", 9, "2000000")]),
]
#: The same, on a controller with ELR enabled.
ELR_CONFIG_CASES: list[tuple[int, str, list[tuple[str, int, str | None]]]] = [
    (4, "1", [("min.insync.replicas", 0, "2")]), (4, "", [("min.insync.replicas", 1, None)]),
    (4, "", [("min.insync.replicas", 0, "2")]), (2, "t", [("min.insync.replicas", 0, "2")]),
    (2, "t", [("min.insync.replicas", 9, "2")]), (4, "", [("min.insync.replicas", 9, "2")]),
]


@pytest.fixture(scope="module")
def kafka_config_answers(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    release = require("4.4.0")
    lines = ["\t".join([str(t), n, *(f"{k}={op}={'<null>' if v is None else v}" for k, op, v in ops)])
             for t, n, ops in CONFIG_CASES]
    lines += ["elr\t" + "\t".join([str(t), n, *(f"{k}={op}={'<null>' if v is None else v}" for k, op, v in ops)])
              for t, n, ops in ELR_CONFIG_CASES]
    return _probe(release, tmp_path_factory.mktemp("config-probe"), _CONFIG_PROBE,
                  "org.apache.kafka.controller.KraftConfigProbe", lines)


def test_alter_configs_are_kafkas(kafka_config_answers: list[str]) -> None:
    # ConfigurationControlManager.incrementalAlterConfigs and legacyAlterConfigs: each resource's error and records.
    base = [broker(1), TopicRecord(name="t", topic_id=uuid.UUID(int=7)),
            ConfigRecord(resource_type=2, resource_name="t", name="retention.ms", value="100"),
            ConfigRecord(resource_type=4, resource_name="1", name="log.retention.ms", value="5")]
    plain, elr = replay([*features(33), *base]), replay([*features(33, eligible_leader_replicas_version=1), *base])
    ours = []
    for image, (t, n, ops) in [*((plain, c) for c in CONFIG_CASES), *((elr, c) for c in ELR_CONFIG_CASES)]:
        if ops[0][1] == 9:  # a legacy AlterConfigs
            legacy_request = legacy.AlterConfigsRequest(resources=[legacy.AlterConfigsResource(
                resource_type=t, resource_name=n, configs=[legacy.AlterableConfig(name=k, value=v) for k, _, v in ops])])
            result: Any = alter_configs(image, ControllerSettings(node_id=3000), legacy_request, 2)
        else:
            request = inc.IncrementalAlterConfigsRequest(resources=[inc.AlterConfigsResource(
                resource_type=t, resource_name=n,
                configs=[inc.AlterableConfig(name=k, config_operation=op, value=v) for k, op, v in ops])])
            result = incremental_alter_configs(image, ControllerSettings(node_id=3000), request, 1)
        (answer,) = result.response.responses
        ours.append("|".join([str(answer.error_code), str(answer.error_message).replace("None", "null"),
                              *(f"{r.message.name}={'null' if r.message.value is None else r.message.value}"
                                if isinstance(r.message, ConfigRecord) else f"ClearElr:{r.message.topic_name}"
                                for r in result.records)]))
    assert ours == kafka_config_answers
    assert len({a.split("|")[1] for a in ours}) > 15  # many distinct answers, not one repeated


#: FeatureControlManager.updateFeatures through ConfigurationControlManager.updateFeatures on a
#: controller 3000 of voters 3000-3001 at metadata.version 30 with group.version 1; broker 1
#: supports every feature, broker 2 lacks share.version and stops at metadata.version 30;
#: controller 3001 lacks streams.version; broker 1 has min.insync.replicas=3.
_FEATURE_PROBE = r"""package org.apache.kafka.controller;

import java.io.*;
import java.util.*;
import org.apache.kafka.clients.admin.FeatureUpdate;
import org.apache.kafka.common.metadata.ConfigRecord;
import org.apache.kafka.common.metadata.FeatureLevelRecord;
import org.apache.kafka.metadata.KafkaConfigSchema;
import org.apache.kafka.metadata.VersionRange;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.server.common.KRaftVersion;

public class KraftFeatureProbe {
    public static void main(String[] args) throws Exception {
        Map<String, VersionRange> all = QuorumFeatures.defaultSupportedFeatureMap(false);
        Map<String, VersionRange> noStreams = new HashMap<>(all);
        noStreams.remove("streams.version");
        Map<String, VersionRange> oldBroker = new HashMap<>(all);
        oldBroker.remove("share.version");
        oldBroker.put("metadata.version", VersionRange.of(7, 30));
        ClusterFeatureSupportDescriber cluster = new ClusterFeatureSupportDescriber() {
            public Iterator<Map.Entry<Integer, Map<String, VersionRange>>> brokerSupported() {
                return new TreeMap<Integer, Map<String, VersionRange>>(Map.of(1, all, 2, oldBroker)).entrySet().iterator();
            }
            public Iterator<Map.Entry<Integer, Map<String, VersionRange>>> controllerSupported() {
                return new TreeMap<Integer, Map<String, VersionRange>>(Map.of(3000, all, 3001, noStreams)).entrySet().iterator();
            }
        };
        KRaftVersionAccessor kraft = new KRaftVersionAccessor() {
            public KRaftVersion kraftVersion() { return KRaftVersion.KRAFT_VERSION_1; }
            public void upgradeKRaftVersion(int epoch, KRaftVersion version, boolean validateOnly) { }
        };
        FeatureControlManager features = new FeatureControlManager.Builder()
            .setQuorumFeatures(new QuorumFeatures(3000, all, List.of(3000, 3001)))
            .setClusterFeatureSupportDescriber(cluster).setKRaftVersionAccessor(kraft).build();
        features.replay(new FeatureLevelRecord().setName("metadata.version").setFeatureLevel((short) 30));
        features.replay(new FeatureLevelRecord().setName("group.version").setFeatureLevel((short) 1));
        ConfigurationControlManager configs = new ConfigurationControlManager.Builder()
            .setKafkaConfigSchema(new KafkaConfigSchema(Map.of(org.apache.kafka.common.config.ConfigResource.Type.BROKER, new org.apache.kafka.common.config.ConfigDef(kafka.server.KafkaConfig.configDef())), Map.of()))
            .setFeatureControl(features).setNodeId(3000).build();
        configs.replay(new ConfigRecord().setResourceType((byte) 4).setResourceName("1").setName("min.insync.replicas").setValue("3"));
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        String line;
        while ((line = in.readLine()) != null) {
            Map<String, Short> updates = new HashMap<>();
            Map<String, FeatureUpdate.UpgradeType> types = new HashMap<>();
            for (String part : line.split("\t")) {
                String[] f = part.split("=");
                updates.put(f[0], Short.parseShort(f[1]));
                types.put(f[0], FeatureUpdate.UpgradeType.fromCode(Integer.parseInt(f[2])));
            }
            ControllerResult<org.apache.kafka.common.requests.ApiError> result = configs.updateFeatures(updates, types, false, 1);
            StringBuilder b = new StringBuilder().append(result.response().error().code()).append("|").append(result.response().message());
            for (ApiMessageAndVersion r : result.records()) {
                if (r.message() instanceof FeatureLevelRecord f) b.append("|").append(f.name()).append("=").append(f.featureLevel());
                else if (r.message() instanceof ConfigRecord c) b.append("|").append(c.resourceName()).append(":").append(c.name()).append("=").append(c.value());
                else b.append("|").append(r.message().getClass().getSimpleName());
            }
            System.out.println(b);
        }
    }
}
"""

FEATURE_CASES: list[list[tuple[str, int, int]]] = [
    [("group.version", 1, 1)], [("share.version", 1, 1)], [("metadata.version", 33, 1)],
    [("metadata.version", 29, 2)], [("metadata.version", 23, 2)], [("metadata.version", 6, 2)],
    [("metadata.version", 30, 1)], [("eligible.leader.replicas.version", 1, 1)], [("transaction.version", 2, 1)],
    [("group.version", 0, 1)], [("group.version", 0, 2)], [("foo", 0, 1)], [("foo", 1, 1)],
    [("kraft.version", 0, 2)], [("streams.version", 1, 1), ("transaction.version", 1, 3)],
    [("transaction.version", 1, 1), ("group.version", 0, 3)], [("transaction.version", 1, 5)],
    [("transaction.version", -1, 1)], [("transaction.version", 1, 2)],
    [("eligible.leader.replicas.version", 1, 1), ("metadata.version", 22, 2)],
]


@pytest.fixture(scope="module")
def kafka_feature_answers(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    release = require("4.4.0")
    lines = ["\t".join(f"{f}={level}={t}" for f, level, t in case) for case in FEATURE_CASES]
    return _probe(release, tmp_path_factory.mktemp("feature-probe"), _FEATURE_PROBE,
                  "org.apache.kafka.controller.KraftFeatureProbe", lines)


def test_update_features_is_kafkas(kafka_feature_answers: list[str]) -> None:
    # FeatureControlManager.updateFeatures (+ maybeGenerateElrSafetyRecords): the error and the records.
    no_share = {k: v for k, v in ALL.items() if k != "share.version"}
    old_broker = {**no_share, "metadata.version": (7, 30)}
    image = replay([*features(30, group_version=1), broker(1, ALL), broker(2, old_broker),
                    ConfigRecord(resource_type=4, resource_name="1", name="min.insync.replicas", value="3")])
    no_streams = {k: v for k, v in ALL.items() if k != "streams.version"}
    ours = []
    for case in FEATURE_CASES:
        request = UpdateFeaturesRequest(feature_updates=[
            FeatureUpdateKey(feature=f, max_version_level=level, upgrade_type=t) for f, level, t in case])
        result = update_features(image, ControllerSettings(node_id=3000), request, 2,
                                 quorum_supported={3000: ALL, 3001: no_streams}, voter_ids=[3000, 3001],
                                 kraft_version=1)
        assert not isinstance(result, KraftVersionUpgrade)
        message = str(result.response.error_message).removeprefix(
            "The update failed for all features since the following feature had an error: ")
        records = [f"{m.name}={m.feature_level}" if isinstance(m, FeatureLevelRecord) else
                   f"{m.resource_name}:{m.name}={'null' if m.value is None else m.value}"
                   for m in (r.message for r in result.records)]
        ours.append("|".join([str(result.response.error_code), message.replace("None", "null"), *records]))
    assert ours == kafka_feature_answers


#: AclControlManager (ACLs 101-104 on topics foo, *, fo (prefixed), bar) and ClientQuotaControlManager
#: (user bob: producer_byte_rate=1024) of Kafka 4.4.0, one operation per line.
_ACL_QUOTA_PROBE = r"""package org.apache.kafka.controller;

import java.io.*;
import java.util.*;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.acl.*;
import org.apache.kafka.common.metadata.AccessControlEntryRecord;
import org.apache.kafka.common.metadata.ClientQuotaRecord;
import org.apache.kafka.common.metadata.RemoveAccessControlEntryRecord;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.resource.*;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.server.common.MetadataVersion;

public class KraftAclQuotaProbe {
    static String nul(String s) { return s.equals("<null>") ? null : s; }

    public static void main(String[] args) throws Exception {
        AclControlManager acls = new AclControlManager.Builder().build();
        String[][] existing = {{"101", "foo", "3"}, {"102", "*", "3"}, {"103", "fo", "4"}, {"104", "bar", "3"}};
        for (String[] e : existing) {
            acls.replay(new AccessControlEntryRecord().setId(new Uuid(0, Long.parseLong(e[0]))).setResourceType((byte) 2)
                .setResourceName(e[1]).setPatternType(Byte.parseByte(e[2])).setPrincipal("User:alice").setHost("*")
                .setOperation((byte) 3).setPermissionType((byte) 3));
        }
        ClientQuotaControlManager quotas = new ClientQuotaControlManager.Builder().build();
        quotas.replay(new ClientQuotaRecord().setEntity(List.of(new ClientQuotaRecord.EntityData()
            .setEntityType("user").setEntityName("bob"))).setKey("producer_byte_rate").setValue(1024.0));
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        String line;
        while ((line = in.readLine()) != null) {
            String[] p = line.split("\t", -1);
            StringBuilder b = new StringBuilder();
            if (p[0].equals("create")) {
                AclBinding binding = new AclBinding(
                    new ResourcePattern(ResourceType.fromCode(Byte.parseByte(p[1])), p[2], PatternType.fromCode(Byte.parseByte(p[3]))),
                    new AccessControlEntry(p[4], p[5], AclOperation.fromCode(Byte.parseByte(p[6])), AclPermissionType.fromCode(Byte.parseByte(p[7]))));
                var result = acls.createAcls(List.of(binding), MetadataVersion.IBP_4_4_IV2);
                var r = result.response().get(0);
                b.append(r.exception().map(e -> "ERROR:" + e.getMessage()).orElse("OK"));
                b.append("|").append(result.records().size());
            } else if (p[0].equals("delete")) {
                AclBindingFilter filter = new AclBindingFilter(
                    new ResourcePatternFilter(ResourceType.fromCode(Byte.parseByte(p[1])), nul(p[2]), PatternType.fromCode(Byte.parseByte(p[3]))),
                    new AccessControlEntryFilter(nul(p[4]), nul(p[5]), AclOperation.fromCode(Byte.parseByte(p[6])), AclPermissionType.fromCode(Byte.parseByte(p[7]))));
                var result = acls.deleteAcls(List.of(filter));
                var r = result.response().get(0);
                b.append(r.exception().map(e -> "ERROR:" + e.getMessage()).orElse("OK"));
                List<String> names = new ArrayList<>();
                r.aclBindingDeleteResults().forEach(d -> names.add(d.aclBinding().pattern().name()));
                Collections.sort(names);
                b.append("|").append(names);
                List<Long> ids = new ArrayList<>();
                for (ApiMessageAndVersion m : result.records()) ids.add(((RemoveAccessControlEntryRecord) m.message()).id().getLeastSignificantBits());
                Collections.sort(ids);
                b.append("|").append(ids);
            } else {
                // quota \t type=name,type=name \t key=value|<null> ...
                Map<String, String> entity = new HashMap<>();
                if (!p[1].isEmpty()) for (String e : p[1].split(",")) { String[] kv = e.split("=", 2); entity.put(kv[0], nul(kv[1])); }
                List<ClientQuotaAlteration.Op> ops = new ArrayList<>();
                for (int i = 2; i < p.length; i++) { String[] kv = p[i].split("=", 2);
                    ops.add(new ClientQuotaAlteration.Op(kv[0], kv[1].equals("<null>") ? null : Double.valueOf(kv[1]))); }
                ClientQuotaEntity e = new ClientQuotaEntity(entity);
                var result = quotas.alterClientQuotas(List.of(new ClientQuotaAlteration(e, ops)));
                var err = result.response().get(e);
                b.append(err.error().code()).append("|").append(err.message());
                for (ApiMessageAndVersion m : result.records()) { ClientQuotaRecord r = (ClientQuotaRecord) m.message();
                    b.append("|").append(r.key()).append("=").append(r.remove() ? "remove" : String.valueOf(r.value())); }
            }
            System.out.println(b);
        }
    }
}
"""

_EXISTING_ACLS = [(101, "foo", 3), (102, "*", 3), (103, "fo", 4), (104, "bar", 3)]
ACL_CREATE_CASES = [(2, "t", 3, "User:a", "*", 3, 3), (2, "foo", 3, "User:alice", "*", 3, 3), (0, "t", 3, "User:a", "*", 3, 3),
                    (2, "t", 0, "User:a", "*", 3, 3), (2, "t", 3, "User:a", "*", 0, 3), (2, "t", 3, "User:a", "*", 3, 0),
                    (2, "t", 3, "nocolon", "*", 3, 3), (2, "t", 3, "User:a", "", 3, 3),
                    (2, "t", 3, "User:a", "10.0.0.0/33", 3, 3), (2, "t", 3, "User:a", "::1/64", 3, 3)]
ACL_DELETE_CASES: list[tuple[int, str | None, int, str | None, str | None, int, int]] = [
    (1, "foo", 2, None, None, 1, 1), (1, None, 4, None, None, 1, 1), (1, "foo", 1, None, None, 1, 1),
    (2, "foo", 3, "User:alice", "*", 3, 3), (2, "foo", 3, "User:bob", None, 1, 1), (0, "foo", 2, None, None, 1, 1),
    (1, "foo", 2, None, None, 0, 1), (1, "food", 2, None, None, 1, 1)]
QUOTA_CASES: list[tuple[dict[str, str | None], list[tuple[str, float | None]]]] = [
    ({"user": "bob"}, [("producer_byte_rate", 1024.0), ("consumer_byte_rate", 2048.0)]),
    ({"user": "bob"}, [("producer_byte_rate", None)]), ({"ip": "no such host"}, [("connection_creation_rate", 1.0)]),
    ({"user": "u"}, [("producer_byte_rate", 1.5)]), ({"ip": "10.0.0.1"}, [("connection_creation_rate", 3e9)]),
    ({"user": "u", "ip": "10.0.0.1"}, [("connection_creation_rate", 1.0)]), ({}, [("producer_byte_rate", 1.0)]),
    ({"group": "g"}, [("producer_byte_rate", 1.0)]), ({"user": ""}, [("producer_byte_rate", 1.0)]),
    ({"user": "u"}, [("bogus", 1.0)]), ({"user": "u"}, [("request_percentage", -1.0)]),
    ({"user": None, "client-id": "c"}, [("request_percentage", 12.5), ("controller_mutation_rate", 3.0)]),
]


def _null(value: str | None) -> str:
    return "<null>" if value is None else value


@pytest.fixture(scope="module")
def kafka_acl_quota_answers(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    release = require("4.4.0")
    lines = ["\t".join(["create", *map(str, c)]) for c in ACL_CREATE_CASES]
    lines += ["\t".join(["delete", str(t), _null(n), str(pt), _null(pr), _null(h), str(op), str(pe)])
              for t, n, pt, pr, h, op, pe in ACL_DELETE_CASES]
    lines += ["\t".join(["quota", ",".join(f"{k}={_null(v)}" for k, v in e.items()),
                         *(f"{k}={_null(None if v is None else repr(v))}" for k, v in ops)]) for e, ops in QUOTA_CASES]
    return _probe(release, tmp_path_factory.mktemp("acl-quota-probe"), _ACL_QUOTA_PROBE,
                  "org.apache.kafka.controller.KraftAclQuotaProbe", lines)


def _acl_image() -> MetadataImage:
    return replay([*features(33), *(AccessControlEntryRecord(
        id=uuid.UUID(int=i), resource_type=2, resource_name=n, pattern_type=pt, principal="User:alice", host="*",
        operation=3, permission_type=3) for i, n, pt in _EXISTING_ACLS)])


def test_create_and_delete_acls_are_kafkas(kafka_acl_quota_answers: list[str]) -> None:
    # AclControlManager.createAcls (validateNewAcl) and deleteAcls (validateFilter, AclBindingFilter.matches).
    image, ours = _acl_image(), []
    for c in ACL_CREATE_CASES:
        created = create_acls(image, CreateAclsRequest(creations=[AclCreation(
            resource_type=c[0], resource_name=c[1], resource_pattern_type=c[2], principal=c[3], host=c[4],
            operation=c[5], permission_type=c[6])]), 3, new_id=lambda: uuid.UUID(int=1))
        (r,) = created.response.results
        ours.append(("OK" if r.error_code == 0 else f"ERROR:{r.error_message}") + f"|{len(created.records)}")
    for d in ACL_DELETE_CASES:
        deleted = delete_acls(image, DeleteAclsRequest(filters=[DeleteAclsFilter(
            resource_type_filter=d[0], resource_name_filter=d[1], pattern_type_filter=d[2], principal_filter=d[3],
            host_filter=d[4], operation=d[5], permission_type=d[6])]), 3)
        (f,) = deleted.response.filter_results
        names = ", ".join(sorted(m.resource_name for m in f.matching_acls))
        ids = ", ".join(str(i) for i in sorted(r.message.id.int for r in deleted.records))
        ours.append(("OK" if f.error_code == 0 else f"ERROR:{f.error_message}") + f"|[{names}]|[{ids}]")
    assert ours == kafka_acl_quota_answers[:len(ours)]


def test_alter_client_quotas_is_kafkas(kafka_acl_quota_answers: list[str]) -> None:
    # ClientQuotaControlManager.alterClientQuotas: the entity's error and its records.
    image = replay([*features(33), cq.ClientQuotaRecord(entity=[cq.EntityData(entity_type="user", entity_name="bob")],
                                                        key="producer_byte_rate", value=1024.0)])
    ours = []
    for entity, ops in QUOTA_CASES:
        request = AlterClientQuotasRequest(entries=[EntryData(
            entity=[EntityData(entity_type=t, entity_name=n) for t, n in entity.items()],
            ops=[OpData(key=k, value=v or 0.0, remove=v is None) for k, v in ops])])
        result = alter_client_quotas(image, request, 1)
        (e,) = result.response.entries
        records = [f"{r.message.key}={'remove' if r.message.remove else repr(r.message.value)}" for r in result.records]
        ours.append("|".join([str(e.error_code), "null" if e.error_message is None else e.error_message, *records]))
    assert ours == kafka_acl_quota_answers[len(ACL_CREATE_CASES) + len(ACL_DELETE_CASES):]


#: ScramControlManager.alterCredentials of Kafka 4.4.0 holding user bob (SCRAM-SHA-256).
_SCRAM_PROBE = r"""package org.apache.kafka.controller;

import java.io.*;
import java.util.*;
import org.apache.kafka.common.message.AlterUserScramCredentialsRequestData;
import org.apache.kafka.common.metadata.UserScramCredentialRecord;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.server.common.MetadataVersion;

public class KraftScramProbe {
    public static void main(String[] args) throws Exception {
        ScramControlManager scram = new ScramControlManager.Builder().build();
        scram.replay(new UserScramCredentialRecord().setName("bob").setMechanism((byte) 1).setSalt(new byte[]{1})
            .setStoredKey(new byte[]{2}).setServerKey(new byte[]{3}).setIterations(4096));
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        String line;
        while ((line = in.readLine()) != null) {
            // del:name:mech or up:name:mech:iterations:salthex:saltedhex, tab-separated
            AlterUserScramCredentialsRequestData request = new AlterUserScramCredentialsRequestData();
            for (String part : line.split("\t")) {
                String[] f = part.split(":", -1);
                if (f[0].equals("del")) {
                    request.deletions().add(new AlterUserScramCredentialsRequestData.ScramCredentialDeletion()
                        .setName(f[1]).setMechanism(Byte.parseByte(f[2])));
                } else {
                    request.upsertions().add(new AlterUserScramCredentialsRequestData.ScramCredentialUpsertion()
                        .setName(f[1]).setMechanism(Byte.parseByte(f[2])).setIterations(Integer.parseInt(f[3]))
                        .setSalt(HexFormat.of().parseHex(f[4])).setSaltedPassword(HexFormat.of().parseHex(f[5])));
                }
            }
            var result = scram.alterCredentials(request, MetadataVersion.IBP_4_4_IV2);
            StringBuilder b = new StringBuilder();
            result.response().results().forEach(r -> b.append(r.user()).append(",").append(r.errorCode()).append(",")
                .append(r.errorMessage()).append(";"));
            for (ApiMessageAndVersion m : result.records()) {
                b.append("|").append(m.message().getClass().getSimpleName());
                if (m.message() instanceof UserScramCredentialRecord u)
                    b.append(":").append(HexFormat.of().formatHex(u.storedKey())).append(":").append(HexFormat.of().formatHex(u.serverKey()));
            }
            System.out.println(b);
        }
    }
}
"""

SCRAM_CASES = [
    "up:alice:1:4096:0a0b:0102030405", "del:bob:1\tdel:bob2:1\tup:carol:2:8192:0a:ff", "del:bob:1\tup:bob:2:4096:0a:ff",
    "up:a:1:4095:0a:ff\tup:b:1:16385:0a:ff\tup::1:4096:0a:ff\tup:c:7:4096:0a:ff",
    "up:x:1:4096:0a:ff\tup:x:1:4096:0a:ff\tup:x:1:4096:0a:ff", "del:bob:2\tdel:bob:1",
    "up:u1:1:4096:00:01\tup:u2:2:4096:00:01\tup:u3:1:4096:00:01\tdel:bob:1",
]


def test_alter_user_scram_credentials_is_kafkas(tmp_path: Path) -> None:
    # ScramControlManager.alterCredentials: results in Kafka's order, stored and server keys as ScramFormatter's.
    answers = _probe(require("4.4.0"), tmp_path, _SCRAM_PROBE, "org.apache.kafka.controller.KraftScramProbe",
                     SCRAM_CASES)
    image = replay([*features(33), UserScramCredentialRecord(name="bob", mechanism=1, salt=b"\x01",
                                                            stored_key=b"\x02", server_key=b"\x03", iterations=4096)])
    ours = []
    for case in SCRAM_CASES:
        deletions, upsertions = [], []
        for part in case.split("\t"):
            f = part.split(":")
            if f[0] == "del":
                deletions.append(ScramCredentialDeletion(name=f[1], mechanism=int(f[2])))
            else:
                upsertions.append(ScramCredentialUpsertion(name=f[1], mechanism=int(f[2]), iterations=int(f[3]),
                                                           salt=bytes.fromhex(f[4]), salted_password=bytes.fromhex(f[5])))
        result = alter_user_scram_credentials(
            image, AlterUserScramCredentialsRequest(deletions=deletions, upsertions=upsertions), 0)
        text = "".join(f"{r.user},{r.error_code},{'null' if r.error_message is None else r.error_message};"
                       for r in result.response.results)
        for r in result.records:
            text += "|" + type(r.message).__name__
            if isinstance(r.message, UserScramCredentialRecord):
                text += f":{r.message.stored_key.hex()}:{r.message.server_key.hex()}"
        ours.append(text)
    assert ours == answers
