"""The power-loss file system (:mod:`kraft.tools.bench.chaos.lazyfs`): what
was fsynced survives a power cut, what was not is gone, a torn write leaves
part of a page; as Jepsen's LazyFS ("clear-cache" and "torn-seq" faults)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kraft.tools.bench.chaos.disks import LazyDisk, fuse_unavailable_reason
from kraft.tools.bench.chaos.lazyfs import PAGE, DirtyFile
from tests.kafka.releases import unavailable


def test_dirty_pages_overlay_the_backing_file(tmp_path: Path) -> None:
    backing = tmp_path / "f"
    backing.write_bytes(b"a" * (PAGE + 10))
    fd = os.open(backing, os.O_RDWR)
    try:
        dirty = DirtyFile(backing.stat().st_size)
        dirty.write(fd, PAGE - 2, b"XYZW")  # across a page boundary
        assert dirty.read(fd, PAGE - 4, 8) == b"aaXYZWaa"
        dirty.write(fd, PAGE + 20, b"end")  # past the end: a hole of zeros
        assert dirty.size == PAGE + 23
        assert dirty.read(fd, PAGE + 8, 15) == b"aa" + b"\0" * 10 + b"end"
        assert backing.read_bytes() == b"a" * (PAGE + 10)  # nothing reached the disk
        dirty.truncate(PAGE)
        assert dirty.read(fd, 0, 2 * PAGE) == b"a" * (PAGE - 2) + b"XY"
        dirty.flush_to(fd)
        assert backing.read_bytes() == b"a" * (PAGE - 2) + b"XY"
    finally:
        os.close(fd)


def _mounted(tmp_path: Path, lie: bool = False) -> LazyDisk:
    reason = fuse_unavailable_reason()
    if reason is not None or os.geteuid() != 0:
        unavailable(reason or "mounting FUSE needs root", "FUSE (the power-loss nemesis)")  # CI=true: a failure
    (tmp_path / "backing").mkdir(exist_ok=True)
    disk = LazyDisk(tmp_path / "mnt", tmp_path / "backing", tmp_path / "lazyfs.log", lie=lie)
    disk.mount()
    return disk


def test_a_power_cut_loses_exactly_the_unsynced_writes(tmp_path: Path) -> None:
    disk = _mounted(tmp_path)
    try:
        path = disk.mountpoint / "segment"
        fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_APPEND, 0o644)
        os.write(fd, b"synced\n")
        os.fsync(fd)
        os.write(fd, b"unsynced\n")
        os.close(fd)
        assert path.read_bytes() == b"synced\nunsynced\n"  # the running system sees both
        os.rename(path, disk.mountpoint / "renamed")  # directory operations pass through
        cut = disk.power_cut()
        assert (disk.backing / "renamed").read_bytes() == b"synced\n"
        # The cut says what it dropped: the 9 unsynced bytes of the renamed file.
        assert cut.dropped == {"renamed": 9} and cut.bytes == 9 and "dropped 9 bytes in 1 files" in cut.describe()
        disk.mount()
        assert (disk.mountpoint / "renamed").read_bytes() == b"synced\n"
    finally:
        disk.close()
    assert not disk.mounted()


def test_a_torn_write_leaves_part_of_the_last_write(tmp_path: Path) -> None:
    disk = _mounted(tmp_path)
    try:
        fd = os.open(disk.mountpoint / "f", os.O_CREAT | os.O_RDWR, 0o644)
        os.write(fd, b"x" * 100)
        os.fsync(fd)
        os.write(fd, b"y" * 1000)
        os.close(fd)
        cut = disk.power_cut(tear=True)
        data = (disk.backing / "f").read_bytes()
        assert data.startswith(b"x" * 100) and 100 < len(data) < 1100 and set(data[100:]) == {ord("y")}
        # What the tear wrote is not dropped; the rest of the 1000 bytes is.
        assert cut.torn.startswith("tore f") and cut.dropped == {"f": 1100 - len(data)}
    finally:
        disk.close()


def test_a_cut_in_the_middle_of_an_fsync_drops_what_it_was_syncing(tmp_path: Path) -> None:
    import threading

    disk = _mounted(tmp_path)
    outcome: list[str] = []

    def sync() -> None:
        fd = os.open(disk.mountpoint / "f", os.O_RDWR | os.O_APPEND)
        try:
            os.write(fd, b"in flight")
            os.fsync(fd)  # held by the disk until the power goes
            outcome.append("synced")
        except OSError as e:
            outcome.append(f"failed: {e.strerror}")
        finally:
            try:
                os.close(fd)
            except OSError:
                pass

    try:
        (disk.mountpoint / "f").write_bytes(b"")
        fd = os.open(disk.mountpoint / "f", os.O_RDWR)
        os.write(fd, b"synced")
        os.fsync(fd)
        os.close(fd)
        since = disk.hold_next_fsync()
        writer = threading.Thread(target=sync)
        writer.start()
        for _ in range(600):
            if disk.held(since):
                break
            writer.join(0.05)
        assert disk.held(since) == "f" and outcome == []  # the fsync has not returned
        cut = disk.power_cut()
        writer.join(30)
        assert outcome and outcome[0].startswith("failed")  # never acknowledged as durable
        assert cut.dropped == {"f": len(b"in flight")}
        assert (disk.backing / "f").read_bytes() == b"synced"
    finally:
        disk.close()


def test_a_cut_with_nothing_unsynced_says_it_dropped_nothing(tmp_path: Path) -> None:
    disk = _mounted(tmp_path)
    try:
        fd = os.open(disk.mountpoint / "f", os.O_CREAT | os.O_RDWR, 0o644)
        os.write(fd, b"synced")
        os.fsync(fd)
        os.close(fd)
        cut = disk.power_cut()
        assert cut.reported and cut.dropped == {} and cut.describe() == "dropped nothing (every write was synced)"
    finally:
        disk.close()


def test_a_lying_disk_persists_nothing_since_the_mount(tmp_path: Path) -> None:
    (tmp_path / "backing").mkdir()
    (tmp_path / "backing" / "before").write_bytes(b"formatted")
    disk = _mounted(tmp_path, lie=True)
    try:
        fd = os.open(disk.mountpoint / "log", os.O_CREAT | os.O_RDWR, 0o644)
        os.write(fd, b"acknowledged")
        os.fsync(fd)  # succeeds, persists nothing
        os.close(fd)
        assert (disk.mountpoint / "log").read_bytes() == b"acknowledged"
        cut = disk.power_cut()
        assert sorted(p.name for p in disk.backing.iterdir()) == ["before"]
        assert cut.dropped == {"log": len(b"acknowledged")}
    finally:
        disk.close()
