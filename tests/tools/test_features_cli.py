"""``kraft features`` output and argument parsing, as Kafka's FeatureCommand
prints and parses them (the tool against real nodes is in
tests/node/test_kraft_version_upgrade.py)."""

from __future__ import annotations

import pytest
from kraft.admin_client.admin_features import FeatureMetadata, SupportedVersionRange
from kraft.tools.features import FeatureLine, feature_lines, format_describe, format_update, parse_name_and_level
from kraft.tools.quorum import ToolError
from tests.harness import cli


def test_describe_sorts_by_name_with_level_0_for_unfinalized_and_dash_for_no_epoch() -> None:
    lines = [FeatureLine("metadata.version", 7, 27, 27), FeatureLine("kraft.version", 0, 1, 0)]
    assert format_describe(lines, None) == (
        "Feature: kraft.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\tFinalizedVersionLevel: 0\tEpoch: -\n"
        "Feature: metadata.version\tSupportedMinVersion: 7\tSupportedMaxVersion: 27\tFinalizedVersionLevel: 27\t"
        "Epoch: -\n")
    assert format_describe(lines[1:], 42).endswith("\tEpoch: 42\n")


def test_describe_rows_come_from_the_admin_clients_feature_metadata() -> None:
    """FeatureCommand.handleDescribe: every supported feature, at its
    finalized level, 0 when the feature is not finalized."""
    metadata = FeatureMetadata(finalized={"metadata.version": 27, "gone.feature": 3}, finalized_epoch=42,
                               supported={"metadata.version": SupportedVersionRange(7, 27),
                                          "kraft.version": SupportedVersionRange(0, 1)})
    assert feature_lines(metadata) == [FeatureLine("metadata.version", 7, 27, 27), FeatureLine("kraft.version", 0, 1, 0)]


def test_update_report_per_feature_sorted() -> None:
    out, failures = format_update("upgrade", {"kraft.version": 1, "a.b": 2}, {"kraft.version": None, "a.b": "nope"},
                                  dry_run=False)
    assert (out, failures) == ("Could not upgrade a.b to 2. nope\nkraft.version was upgraded to 1.\n", 1)
    out, failures = format_update("upgrade", {"kraft.version": 1}, {"kraft.version": None}, dry_run=True)
    assert (out, failures) == ("kraft.version can be upgraded to 1.\n", 0)
    out, _ = format_update("disable", {"x": 0}, {"x": "no"}, dry_run=True)
    assert out == "Can not disable x. no\n"
    out, _ = format_update("disable", {"x": 0}, {"x": None}, dry_run=False)
    assert out == "x was disabled.\n"


def test_feature_equals_level_parsing() -> None:
    assert parse_name_and_level(" kraft.version = 1 ") == ("kraft.version", 1)
    with pytest.raises(ToolError, match="^Can't parse feature=level string kraft.version: equals sign not found.$"):
        parse_name_and_level("kraft.version")
    with pytest.raises(ToolError, match="unable to parse one as a short.$"):
        parse_name_and_level("kraft.version=one")
    with pytest.raises(ToolError, match="unable to parse 40000 as a short.$"):
        parse_name_and_level("kraft.version=40000")


@pytest.mark.parametrize(("args", "message"), [
    (["upgrade"], "You must specify at least one feature to upgrade"),
    (["upgrade", "--feature", "a=1", "--feature", "a=2"], "Feature a was specified more than once."),
    (["disable", "--feature", "a", "--feature", "a"], "Feature a was specified more than once."),
])
def test_bad_arguments_fail_before_connecting(args: list[str], message: str) -> None:
    result = cli.invoke(["features", "--bootstrap-controller", "127.0.0.1:1", *args])
    assert result.exit_code == 1
    assert message in result.output


def test_exactly_one_bootstrap_option() -> None:
    result = cli.invoke(["features", "describe"])
    assert result.exit_code != 0 and "--bootstrap-controller" in result.output
