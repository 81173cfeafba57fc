"""The kraft.version 0 -> 1 upgrade on real nodes (KIP-853): a static quorum
(``controller.quorum.voters``) refuses AddRaftVoter; ``kraft features
upgrade --feature kraft.version=1`` (kafka-features.sh's UpdateFeatures)
makes it dynamic; then a controller is added, and ``kraft quorum describe
--status`` shows a reassignment's progress. Real processes for the tools,
real sockets on 127.0.0.1, real files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trio

from kraft.messages.generated import update_features_request as uf_req
from kraft.messages.json_form import uuid_to_kafka
from kraft.messages.generated.api_versions_request import ApiVersionsRequest
from kraft.node.node import KraftNode
from kraft.wire.apis import ApiKey
from kraft.wire.network_client import PeerClient
from kraft.wire.errors import ErrorCode
from tests.harness import cli
from tests.harness.configs import CLUSTER_ID, load, make_configs
from tests.harness.inprocess import leader_of
from tests.harness.poll import until_async
from tests.node.reconfig_cluster import add_voter, directory_id

HOST = "127.0.0.1"
VOTERS = (1, 2, 3)
NEW = 4
FAST = {"controller.quorum.election.timeout.ms": "500", "controller.quorum.fetch.timeout.ms": "1000"}
PREFIX = "The update failed for all features since the following feature had an error: "


async def kraft_cli(*args: str) -> tuple[int, str, str]:
    result = await cli.run_async(*args)
    return result.returncode, result.stdout.decode(), result.stderr.decode()


async def ask(port: int, api: ApiKey, body: Any, version: int) -> Any:
    client = PeerClient(HOST, port, client_id="upgrade-test", request_timeout_ms=10_000)
    try:
        _, response = await client.request(api, lambda v: body, max_version=version)
        return response
    finally:
        await client.aclose()


def update(feature: str, level: int, *, upgrade_type: int = 1, validate_only: bool = False) -> Any:
    return uf_req.UpdateFeaturesRequest(
        timeout_ms=10_000, validate_only=validate_only,
        feature_updates=[uf_req.FeatureUpdateKey(feature=feature, max_version_level=level, upgrade_type=upgrade_type)])


async def test_upgrade_a_static_quorum_then_add_a_controller(tmp_path: Path) -> None:
    paths = make_configs(tmp_path, list(VOTERS), observers=[NEW], extra=FAST)
    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            nodes = {i: KraftNode(load(paths[i])) for i in (*VOTERS, NEW)}
            for node in nodes.values():
                await nursery.start(node.run)
            voters = [nodes[i] for i in VOTERS]
            leader = await leader_of(voters)
            leader_id = leader.config.node_id
            follower = next(n for n in voters if n is not leader)
            port = leader.ports["CONTROLLER"]
            new_dir = directory_id(tmp_path, NEW)
            new_port = nodes[NEW].ports["CONTROLLER"]
            bootstrap = ",".join(f"{HOST}:{n.ports['CONTROLLER']}" for n in voters)

            await until_async("the leader's epoch committed",
                              lambda: leader.high_watermark > 0)  # the leader's epoch is committed
            # kraft.version 0: no voter changes (KIP-853).
            body = await add_voter((HOST, port), NEW, new_dir, new_port)
            assert body.error_code == ErrorCode.UNSUPPORTED_VERSION, body
            code, out, err = await kraft_cli("features", "--bootstrap-controller", bootstrap, "describe")
            assert (code, out) == (0, "Feature: kraft.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\t"
                                      "FinalizedVersionLevel: 0\tEpoch: -\n"), err

            # What a Kafka controller that knows only kraft.version answers.
            r = await ask(follower.ports["CONTROLLER"], ApiKey.UPDATE_FEATURES, update("kraft.version", 1), 2)
            assert (r.error_code, r.error_message) == (
                ErrorCode.NOT_CONTROLLER, f"The active controller appears to be node {leader_id}.")
            r = await ask(port, ApiKey.UPDATE_FEATURES, update("kraft.version", 2), 2)
            assert (r.error_code, r.error_message) == (ErrorCode.INVALID_UPDATE_VERSION, PREFIX + (
                f"Invalid update version 2 for feature kraft.version. Local controller {leader_id} only supports "
                "versions 0-1"))
            r = await ask(port, ApiKey.UPDATE_FEATURES, update("metadata.version", 21), 2)
            assert (r.error_code, r.error_message) == (ErrorCode.INVALID_UPDATE_VERSION, PREFIX + (
                f"Invalid update version 21 for feature metadata.version. Local controller {leader_id} does not "
                "support this feature."))
            r = await ask(port, ApiKey.UPDATE_FEATURES, update("kraft.version", 0, upgrade_type=2), 2)
            assert (r.error_code, r.results) == (ErrorCode.NONE, [])  # already 0: nothing to do

            # A dry run, once every voter told the leader it supports 1
            # (UpdateRaftVoter, once per epoch): changes nothing.
            while True:
                r = await ask(port, ApiKey.UPDATE_FEATURES, update("kraft.version", 1, validate_only=True), 1)
                if r.error_code == ErrorCode.NONE:
                    break
                assert r.error_code == ErrorCode.INVALID_UPDATE_VERSION, r
                assert r.error_message == PREFIX + (
                    "Invalid upgrade of kraft.version to KRAFT_VERSION_1 because not all of the voters support it")
                await trio.sleep(0.1)
            assert [(x.feature, x.error_code, x.error_message) for x in r.results] == [
                ("kraft.version", ErrorCode.NONE, "NONE")]
            assert leader.raft_driver is not None and leader.raft_driver.core.kraft_version == 0
            code, out, err = await kraft_cli("features", "--bootstrap-controller", bootstrap, "upgrade",
                                             "--feature", "kraft.version=1", "--dry-run")
            assert (code, out) == (0, "kraft.version can be upgraded to 1.\n"), err
            assert leader.raft_driver.core.kraft_version == 0

            code, out, err = await kraft_cli("features", "--bootstrap-controller", bootstrap, "upgrade",
                                             "--feature", "kraft.version=1")
            assert (code, out, err) == (0, "kraft.version was upgraded to 1.\n", "")
            # Answered once committed: the leader's log holds it below its high watermark.
            position = leader.raft_driver.core.pending_kraft_version_upgrade
            assert position is not None and leader.high_watermark > position.offset
            voter_set = leader.raft_driver.core.voters
            assert voter_set.voter_ids == VOTERS
            assert [k.directory_id for k in voter_set.voter_keys] == [directory_id(tmp_path, i) for i in VOTERS]
            await until_async("kraft.version 1 everywhere",
                              lambda: all(n.raft_driver is not None and n.raft_driver.core.kraft_version == 1 for n in nodes.values()))

            # Every node now reports kraft.version 1 with an epoch (a committed offset).
            av = await ask(follower.ports["CONTROLLER"], ApiKey.API_VERSIONS,
                           ApiVersionsRequest(client_software_name="t", client_software_version="1"), 4)
            assert [(f.name, f.max_version_level) for f in av.finalized_features] == [("kraft.version", 1)]
            await until_async("the follower past the upgrade", lambda: follower.high_watermark > position.offset)
            code, out, err = await kraft_cli("features", "--bootstrap-controller",
                                             f"{HOST}:{follower.ports['CONTROLLER']}", "describe")
            assert code == 0, err
            head, _, epoch = out.rstrip("\n").rpartition("\tEpoch: ")
            assert head == ("Feature: kraft.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\t"
                            "FinalizedVersionLevel: 1")
            assert int(epoch) >= position.offset

            # Upgrading again is a success that changes nothing, as in Kafka.
            code, out, _ = await kraft_cli("features", "--bootstrap-controller", bootstrap, "upgrade",
                                           "--feature", "kraft.version=1")
            assert (code, out) == (0, "kraft.version was upgraded to 1.\n")
            code, out, err = await kraft_cli("features", "--bootstrap-controller", bootstrap, "downgrade",
                                             "--feature", "kraft.version=0")
            assert (code, out, err) == (1, "Could not downgrade kraft.version to 0. " + PREFIX +
                                        "Invalid update version 0 for feature kraft.version. Can't downgrade the "
                                        "version of this feature.\n", "1 out of 1 operation(s) failed.\n")

            # Now a dynamic quorum: the observer becomes a voter.
            while True:
                leader = await leader_of(voters)
                body = await add_voter((HOST, leader.ports["CONTROLLER"]), NEW, new_dir, new_port)
                if body.error_code == ErrorCode.NONE:
                    break
                assert body.error_code in (ErrorCode.REQUEST_TIMED_OUT, ErrorCode.NOT_LEADER_OR_FOLLOWER), body
                await trio.sleep(0.1)
            assert leader.raft_driver is not None and leader.raft_driver.core.voters.voter_ids == (*VOTERS, NEW)
            await until_async("the new node a voter",
                              lambda: nodes[NEW].raft_driver is not None and nodes[NEW].raft_driver.core.quorum.is_voter)

            # describe --status: Kafka's lines alone, plus a KIP-642
            # reassignment's progress while one is in progress.
            code, plain, err = await kraft_cli("quorum", "--bootstrap-controller", bootstrap, "describe", "--status")
            assert code == 0, err
            assert [line.split(":")[0] for line in plain.splitlines()] == [
                "ClusterId", "LeaderId", "LeaderEpoch", "HighWatermark", "MaxFollowerLag", "MaxFollowerLagTimeMs",
                "CurrentVoters", "CurrentObservers"]
            dirs = {i: uuid_to_kafka(directory_id(tmp_path, i)) for i in (*VOTERS, NEW)}
            state = tmp_path / f".kraft-reassignment-{CLUSTER_ID}.json"
            state.write_text(json.dumps({"cluster_id": CLUSTER_ID,
                                         "original": ",".join(f"{i}:{dirs[i]}" for i in VOTERS),
                                         "target": ",".join(f"{i}:{dirs[i]}" for i in (2, 3, NEW))}))
            result = await cli.run_async("quorum", "--bootstrap-controller", bootstrap, "describe", "--status",
                                         cwd=tmp_path)
            out = result.stdout.decode()
            assert result.returncode == 0, result.stderr.decode()
            kafka_lines, extra = out.splitlines()[:8], out.splitlines()[8:]
            assert [line.split(":")[0] for line in kafka_lines] == [line.split(":")[0] for line in plain.splitlines()]
            assert extra == ["ReassignmentTarget:     [2, 3, 4]", "ReassignmentAdding:     []",
                             "ReassignmentRemoving:   [1]",
                             f"ReassignmentStep:       Removing controller 1 with directory id {dirs[1]}"]
            # Once the voter set is the target the reassignment shows no more.
            state.write_text(json.dumps({"cluster_id": CLUSTER_ID, "original": "1,2,3",
                                         "target": ",".join(f"{i}:{dirs[i]}" for i in (*VOTERS, NEW))}))
            code, out, err = await kraft_cli("quorum", "--bootstrap-controller", bootstrap, "describe", "--status",
                                             "--state-file", str(state))
            assert code == 0 and "Reassignment" not in out, (out, err)

            # From kraft.version 1 on, quorum-state is written as data_version 1
            # (votedDirectoryId), as Kafka's FileQuorumStateStore.writeElectionState
            # writes kraftVersion.quorumStateVersion(): a new election shows it.
            old = await leader_of(voters)
            old_epoch = old.leader.epoch
            await old.shutdown(5000)
            rest = [n for n in (*voters, nodes[NEW]) if n is not old]

            def stored(n: KraftNode) -> dict[str, Any]:
                assert n.raft_driver is not None
                return dict(json.loads(n.raft_driver.store.file.path.read_text()))

            await until_async("a new epoch stored everywhere",
                              lambda: all(stored(n)["leaderEpoch"] > old_epoch for n in rest))
            for n in rest:
                assert stored(n)["data_version"] == 1 and "votedDirectoryId" in stored(n), stored(n)
            nursery.cancel_scope.cancel()
