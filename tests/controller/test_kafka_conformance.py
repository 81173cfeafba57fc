"""The controller's tables against the real Kafka 4.4 jars: a small Java
program (compiled here against the release's jars) asks Kafka's own
``LogConfig.validate``, ``QuorumFeatures.defaultSupportedFeatureMap`` and
``CidrUtils.validate``, and the answers must be kraft's."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from kraft.controller.acls import validate_host_pattern
from kraft.controller.feature_control import FEATURES, controller_supported_features
from kraft.controller.topic_configs import TOPIC_CONFIGS, validate_topic_configs
from tests.kafka.releases import KafkaRelease, require, unavailable

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


def _probe(release: KafkaRelease, tmp: Path, lines: list[str]) -> list[str]:
    javac = shutil.which("javac")
    if javac is None:
        unavailable("no javac on PATH (bash .ci/deps installs a JDK)")
    (tmp / "KraftProbe.java").write_text(_PROBE)
    subprocess.run([javac, "-cp", release.classpath, "-d", str(tmp), str(tmp / "KraftProbe.java")], check=True,
                   capture_output=True)
    out = subprocess.run(["java", "-cp", f"{release.classpath}:{tmp}", "KraftProbe"], input="\n".join(lines) + "\n",
                         check=True, capture_output=True, text=True, encoding="utf-8", timeout=300)
    return out.stdout.splitlines()


@pytest.fixture(scope="module")
def kafka_answers(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    release = require("4.4.0")
    lines = ["topic\t" + "\t".join(f"{k}={v}" for k, v in case.items()) for case in TOPIC_CASES]
    lines += [f"cidr\t{c}" for c in CIDR_CASES]
    return _probe(release, tmp_path_factory.mktemp("probe"), lines)


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
