"""The finding model: one line, JSON, exit status; and a node that refuses
the doctor's requests (Kafka's controller wants ALTER on CLUSTER for
DescribeCluster, ``ControllerApis.handleDescribeCluster``): reachable, not
unreachable, and said to be checked incompletely."""

from __future__ import annotations

from kraft.doctor.findings import Finding, Severity, as_json, exit_status, format_line
from kraft.doctor.live import NodeAnswer, live_findings


def test_one_line_json_and_exit_status() -> None:
    error = Finding(Severity.ERROR, "voter-unreachable", "voter 2 does not answer", {"node": 2, "ids": [1, 3]},
                    "start it")
    warning = Finding(Severity.WARNING, "even-voter-count", "4 voters")
    assert format_line(error) == "ERROR   voter-unreachable: voter 2 does not answer (node=2, ids=[1,3]) fix: start it"
    assert format_line(warning) == "WARNING even-voter-count: 4 voters"
    assert (exit_status([]), exit_status([warning]), exit_status([warning, error])) == (0, 10, 1)
    doc = as_json([warning], {"controllers": ["127.0.0.1:1"]})
    assert doc == {"checked": {"controllers": ["127.0.0.1:1"]}, "status": 10, "findings": [
        {"severity": "WARNING", "code": "even-voter-count", "what": "4 voters", "evidence": {}, "fix": None}]}


def test_a_node_that_refuses_describe_cluster_is_reachable_but_not_fully_checked() -> None:
    answers = [NodeAnswer("127.0.0.1", 9093, None, kraft_version=1,
                          refused=("DescribeCluster: CLUSTER_AUTHORIZATION_FAILED",))]
    findings = live_findings(answers)
    assert [f.code for f in findings] == ["not-authorized"]
    assert "CLUSTER_AUTHORIZATION_FAILED" in format_line(findings[0])


def test_a_follower_in_an_older_epoch_is_an_epoch_disagreement() -> None:
    """kraft followers name their epoch in DescribeQuorum's NOT_LEADER_OR_FOLLOWER answer."""
    common = {"cluster_id": "c", "controller_id": 1, "controllers": (1, 2), "kraft_version": 1}
    answers = [NodeAnswer("127.0.0.1", 1, 1, epoch=5, **common),  # type: ignore[arg-type]
               NodeAnswer("127.0.0.1", 2, 2, epoch=4, **common)]  # type: ignore[arg-type]
    findings = live_findings(answers)
    assert [f.code for f in findings] == ["epoch-disagreement", "even-voter-count"]
    assert findings[0].evidence == {"127.0.0.1:1": 5, "127.0.0.1:2": 4}
