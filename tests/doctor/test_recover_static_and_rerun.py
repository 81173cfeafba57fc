"""``kraft storage recover-quorum`` (issue 26): it asks every old voter it
knows an address for and refuses without ``--offline`` when it knows one by
id only; on a static quorum it offers the config edit and ``--rewrite-config``
makes it with a copy; run again, it finds nothing to do. Run on copies of
real Kafka 4.0 directories (``fixtures/``) and a real node process."""

from __future__ import annotations

from pathlib import Path

from kraft.records.log import MetadataLog, metadata_partition_dir
from kraft.records.state_files import QuorumStateFile, QuorumStateFileData
from tests.doctor.helpers import DynamicQuorum, leader_of
from tests.doctor.test_recover_refusals import copy_real, run, snapshot_of
from tests.ports import free_ports


def static_survivor(tmp_path: Path, extra: str = "") -> tuple[Path, Path]:
    """Kafka 4.0's combined-static node 1 as the survivor of a static quorum
    of three: its quorum-state (data version 0) names voters 1, 2 and 3 by id."""
    directory, config = copy_real(tmp_path, "combined-static", 1, extra)
    state_file = QuorumStateFile(metadata_partition_dir(directory) / "quorum-state")
    state = state_file.read()
    state_file.write(QuorumStateFileData(leader_id=-1, leader_epoch=state.leader_epoch, voted_id=-1,
                                         current_voters=(1, 2, 3), data_version=0))
    return directory, config


def log_end(directory: Path) -> int:
    with MetadataLog.open(metadata_partition_dir(directory)) as log:
        return log.end_offset


def test_voters_known_by_id_only_are_named_and_nothing_is_written_without_offline(tmp_path: Path) -> None:
    """Before: nobody was asked and the directory rewritten: two leaders if 2 and 3 were alive."""
    directory, config = static_survivor(tmp_path)
    before = snapshot_of(directory)
    code, out, err = run(config, "--unsafe")
    assert code == 1, out + err
    assert len(err.strip().splitlines()) == 1, err
    assert "no address is known for old voters 2, 3" in err and "--offline" in err, err
    assert snapshot_of(directory) == before
    assert not list(tmp_path.glob("*.recover-quorum-backup-*"))
    code, out, err = run(config, "--unsafe", "--offline")
    assert code == 0, out + err
    assert "Appended the new voter set" in out


def test_a_static_quorum_gets_the_config_edit_and_rewrite_config_makes_it(tmp_path: Path) -> None:
    p2, p3 = free_ports(2)
    voters = f"controller.quorum.voters=1@127.0.0.1:1,2@127.0.0.1:{p2},3@127.0.0.1:{p3}"
    directory, config = static_survivor(tmp_path, "# the quorum\n" + voters + "\n")
    original = config.read_text()
    code, out, err = run(config)
    assert code == 0, out + err
    assert f"- {voters}\n" in out and "+ controller.quorum.bootstrap.servers=127.0.0.1:1\n" in out, out
    assert "--rewrite-config" in out and config.read_text() == original
    # --unsafe alone would leave a config that names a voter set the log no longer has.
    code, out, err = run(config, "--unsafe", "--offline")
    assert code == 1 and "--rewrite-config" in err and len(err.strip().splitlines()) == 1, err
    assert config.read_text() == original
    # The addresses of the static voters are asked (nobody listens there: the quorum is lost).
    code, out, err = run(config, "--unsafe", "--rewrite-config", "--timeout-ms", "1000")
    assert code == 0, out + err
    assert f"Asked 2@127.0.0.1:{p2}, 3@127.0.0.1:{p3}: none answers." in out, out
    text = config.read_text()
    assert "controller.quorum.voters" not in text and "# the quorum\ncontroller.quorum.bootstrap.servers=127.0.0.1:1\n" in text
    backups = list(tmp_path.glob(f"{config.name}.recover-quorum-backup-*"))
    assert len(backups) == 1 and backups[0].read_text() == original


def test_a_static_voter_that_answers_stops_the_recovery(tmp_path: Path) -> None:
    (tmp_path / "alive").mkdir()
    q = DynamicQuorum(tmp_path / "alive", voters=[2], append_rate=0)
    try:
        q.start(2)
        leader_of(q.ports, [2])
        voters = f"controller.quorum.voters=1@127.0.0.1:1,2@127.0.0.1:{q.ports[2]},3@127.0.0.1:{free_ports(1)[0]}"
        directory, config = static_survivor(tmp_path, voters + "\n")
        before = snapshot_of(directory)
        code, out, err = run(config, "--unsafe", "--rewrite-config")
        assert code == 1, out + err
        assert f"other voters are alive (2@127.0.0.1:{q.ports[2]})" in err, err
        assert snapshot_of(directory) == before and "controller.quorum.voters" in config.read_text()
    finally:
        q.stop()


def test_a_second_run_finds_nothing_to_do(tmp_path: Path) -> None:
    """Before: a second VotersRecord and a second backup."""
    directory, config = copy_real(tmp_path, "controller1", 1)
    code, out, err = run(config, "--unsafe", "--offline")
    assert code == 0, out + err
    end = log_end(directory)
    after_first = snapshot_of(directory)
    assert len(list(tmp_path.glob("*.recover-quorum-backup-*"))) == 1
    code, out, err = run(config, "--unsafe", "--offline")
    assert code == 0, out + err
    assert "Nothing to recover: node 1 is already the only voter" in out and "nothing was changed" in out, out
    assert log_end(directory) == end and snapshot_of(directory) == after_first
    assert len(list(tmp_path.glob("*.recover-quorum-backup-*"))) == 1


def test_a_second_run_still_offers_a_config_edit_left_undone(tmp_path: Path) -> None:
    """The log was recovered but the config is the static one again (restored
    from its copy): nothing to recover, only the edit, which --rewrite-config makes."""
    voters = "controller.quorum.voters=1@127.0.0.1:1,2@127.0.0.1:2,3@127.0.0.1:3"
    directory, config = static_survivor(tmp_path, voters + "\n")
    code, out, err = run(config, "--unsafe", "--offline", "--rewrite-config")
    assert code == 0, out + err
    (backup,) = tmp_path.glob(f"{config.name}.recover-quorum-backup-*")
    config.write_text(backup.read_text())
    backup.unlink()
    end = log_end(directory)
    code, out, err = run(config, "--unsafe", "--offline")
    assert code == 0, out + err
    assert "Nothing to recover" in out and f"- {voters}" in out and "--rewrite-config" in out, out
    assert voters in config.read_text() and log_end(directory) == end
    code, out, err = run(config, "--unsafe", "--offline", "--rewrite-config")
    assert code == 0, out + err
    assert "controller.quorum.voters" not in config.read_text() and log_end(directory) == end
    assert len(list(tmp_path.glob("*.recover-quorum-backup-*"))) == 2  # the directory's and the config's
