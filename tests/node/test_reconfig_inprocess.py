"""KIP-853 in one trio process: real nodes on 127.0.0.1 grow a dynamic
quorum from one --standalone controller, and shrink it, through
AddRaftVoter / RemoveRaftVoter on the real wire."""

from __future__ import annotations

from pathlib import Path

import trio

from kraft.raft.errors import Errors
from kraft.node.node import KraftNode
from tests.harness import cli
from tests.harness.configs import format_node, load, write_configs
from tests.harness.inprocess import append_until_ok, history, leader_of
from tests.harness.poll import until_async
from tests.node.reconfig_cluster import add_voter, directory_id, remove_voter


async def start(nursery: trio.Nursery, path: Path) -> KraftNode:
    node = KraftNode(load(path))
    await nursery.start(node.run)
    return node


async def add_until_ok(leader_of_cluster, node_id: int, directory, port: int) -> None:  # type: ignore[no-untyped-def]
    """AddRaftVoter, retried while the leader says REQUEST_TIMED_OUT (the
    new voter is still catching up)."""
    while True:
        leader = await leader_of_cluster()
        body = await add_voter(("127.0.0.1", leader.ports["CONTROLLER"]), node_id, directory, port)
        # DUPLICATE_VOTER: an earlier attempt whose answer timed out (the
        # commit outlasted the request on a loaded machine) went through.
        if body.error_code in (Errors.NONE, Errors.DUPLICATE_VOTER):
            return
        assert body.error_code in (Errors.REQUEST_TIMED_OUT, Errors.NOT_LEADER_OR_FOLLOWER), body
        await trio.sleep(0.1)


async def test_grow_from_standalone_then_remove_the_leader(tmp_path: Path) -> None:
    paths, ports = write_configs(tmp_path, [1, 2, 3])
    format_node(paths[1], "--standalone")
    format_node(paths[2])
    format_node(paths[3])
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nodes = {i: await start(nursery, p) for i, p in paths.items()}

            async def current_leader() -> KraftNode:
                return await leader_of(nodes.values())

            first = await current_leader()
            assert first is nodes[1]
            assert nodes[1].raft_driver is not None and nodes[1].raft_driver.core.kraft_version == 1
            before = await append_until_ok(nodes.values(), [b"before"])
            for node_id in (2, 3):
                await add_until_ok(current_leader, node_id, directory_id(tmp_path, node_id), ports[node_id])
            assert nodes[1].raft_driver is not None
            assert nodes[1].raft_driver.core.voters.voter_ids == (1, 2, 3)
            # Every node learned the voter set from the log.
            await until_async("voter set everywhere",
                              lambda: all(n.raft_driver is not None and n.raft_driver.core.voters.voter_ids == (1, 2, 3)
                                          for n in nodes.values()))
            assert nodes[2].raft_driver is not None and nodes[2].raft_driver.core.quorum.is_voter
            after = await append_until_ok(nodes.values(), [b"three voters"])
            # Remove the leader: it commits the removal under {2, 3}, then hands over.
            body = await remove_voter(("127.0.0.1", ports[1]), 1, directory_id(tmp_path, 1))
            assert body.error_code == Errors.NONE, body
            await until_async("a new leader", lambda: any(n.role == "leader" for i, n in nodes.items() if i != 1))
            last = await append_until_ok([nodes[2], nodes[3]], [b"without 1"])
            for node in nodes.values():
                _, records = await history(node, last, start_offset=0)
                assert records[before] == b"before" and records[after] == b"three voters"
                assert records[last] == b"without 1"
            assert nodes[2].raft_driver is not None and nodes[2].raft_driver.core.voters.voter_ids == (2, 3)
            nursery.cancel_scope.cancel()


def rewrite(path: Path, **changes: str) -> None:
    lines = []
    for line in path.read_text().splitlines():
        key = line.partition("=")[0]
        if key in changes:
            line = f"{key}={changes.pop(key)}"
        lines.append(line)
    lines += [f"{k}={v}" for k, v in changes.items()]
    path.write_text("\n".join(lines) + "\n")


async def test_auto_join_update_voter_and_a_replaced_disk(tmp_path: Path) -> None:
    """controller.quorum.auto.join.enable: observers add themselves; after its
    disk is replaced one first removes the stale voter with its id. A voter
    that comes back on another port tells the leader (UpdateRaftVoter)."""
    import shutil

    from tests.ports import free_ports

    paths, ports = write_configs(tmp_path, [1, 2, 3], extra={"controller.quorum.auto.join.enable": "true"})
    format_node(paths[1], "--standalone")
    format_node(paths[2])
    format_node(paths[3])
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nodes = {i: await start(nursery, paths[i]) for i in (1, 2, 3)}

            def voters() -> tuple[int, ...]:
                raft_driver = nodes[1].raft_driver
                return () if raft_driver is None else raft_driver.core.voters.voter_ids

            def voter_key(node_id: int):  # type: ignore[no-untyped-def]
                leader = next((n for n in nodes.values() if n.role == "leader"), None)
                return None if leader is None or leader.raft_driver is None else leader.raft_driver.core.voters.key(node_id)

            await until_async("2 and 3 join", lambda: voters() == (1, 2, 3))
            first_dir = directory_id(tmp_path, 3)
            assert voter_key(3).directory_id == first_dir
            await append_until_ok(nodes.values(), [b"with three voters"])

            # 3 moves to another port: it sends UpdateRaftVoter, the leader records it.
            await nodes[3].shutdown()
            new_port = free_ports(1)[0]
            rewrite(paths[3], listeners=f"CONTROLLER://127.0.0.1:{new_port}")
            nodes[3] = await start(nursery, paths[3])

            def leader_knows_port() -> bool:
                key = voter_key(3)
                leader = next((n for n in nodes.values() if n.role == "leader"), None)
                return key is not None and leader is not None and leader.raft_driver is not None and any(
                    e.port == new_port for e in leader.raft_driver.core.voters.endpoints(3))

            await until_async("the new port is recorded", leader_knows_port)
            await append_until_ok(nodes.values(), [b"after the move"])

            # 3's disk is replaced: a new directory id; auto-join swaps the keys.
            await nodes[3].shutdown()
            shutil.rmtree(tmp_path / "node-3")
            format_node(paths[3])
            second_dir = directory_id(tmp_path, 3)
            assert second_dir != first_dir
            nodes[3] = await start(nursery, paths[3])
            await until_async("the new disk joins",
                              lambda: voter_key(3) is not None and voter_key(3).directory_id == second_dir)
            last = await append_until_ok(nodes.values(), [b"new disk"])
            _, records = await history(nodes[3], last, start_offset=0)
            assert records[last] == b"new disk"
            nursery.cancel_scope.cancel()


async def quorum_tool(ports: dict[int, int], *args: str) -> "trio.CompletedProcess[bytes]":  # type: ignore[name-defined]
    bootstrap = ",".join(f"127.0.0.1:{p}" for p in ports.values())
    return await cli.run_async("quorum", "--bootstrap-controller", bootstrap, *args)


async def test_reassign_status_cancel_and_bad_targets(tmp_path: Path) -> None:
    paths, ports = write_configs(tmp_path, [1, 2, 3, 4])
    format_node(paths[1], "--standalone")
    for i in (2, 3, 4):
        format_node(paths[i])
    state = str(tmp_path / "reassign.json")
    configs = [arg for i in (2, 3, 4) for arg in ("--controller-config", str(paths[i]))]
    # A bound for a hang, not a speed requirement: eight tool processes on a loaded machine.
    with trio.fail_after(300):
        async with trio.open_nursery() as nursery:
            nodes = {i: await start(nursery, p) for i, p in paths.items()}
            await append_until_ok(nodes.values(), [b"r"])
            grow = await quorum_tool(ports, "reassign", "--voters", "1,2,3", "--state-file", state, *configs)
            assert grow.returncode == 0, grow.stderr
            assert grow.stdout.decode().splitlines()[-1].startswith("Reassignment complete. CurrentVoters: [1:")
            none = await quorum_tool(ports, "reassign", "--status", "--state-file", state)
            assert none.returncode == 0 and none.stdout.startswith(b"No reassignment in progress")
            # Unknown replica and malformed targets: one line, exit 1, nothing changes.
            for bad, why in (("1,9", "unknown replica 9"), ("1,x", "invalid voter"), ("", "names no voter")):
                out = await quorum_tool(ports, "reassign", "--voters", bad, "--state-file", state, *configs)
                assert out.returncode == 1 and why in out.stderr.decode(), out.stderr
                assert len(out.stderr.decode().strip().splitlines()) == 1
            # Node 4 stops: a move to (1, 2, 4) waits for it to catch up, and times out resumable.
            await nodes[4].shutdown()
            stuck = await quorum_tool(ports, "reassign", "--voters", "1,2,4", "--state-file", state,
                                      "--timeout-ms", "3000", *configs)
            assert stuck.returncode == 1 and b"run the same command again" in stuck.stderr, stuck.stderr
            status = await quorum_tool(ports, "reassign", "--status", "--state-file", state)
            text = status.stdout.decode()
            assert status.returncode == 0, status.stderr
            adding = next(line for line in text.splitlines() if line.startswith("Adding:"))
            removing = next(line for line in text.splitlines() if line.startswith("Removing:"))
            assert "'4:" in adding and "'3:" in removing, text
            # --cancel: back to where it started.
            cancel = await quorum_tool(ports, "reassign", "--cancel", "--state-file", state)
            assert cancel.returncode == 0, cancel.stderr
            assert not Path(state).exists()
            leader = await leader_of([nodes[1], nodes[2], nodes[3]])
            assert leader.raft_driver is not None and leader.raft_driver.core.voters.voter_ids == (1, 2, 3)
            nursery.cancel_scope.cancel()
