"""The ``kraft.version`` feature and its 0 -> 1 upgrade at the leader (KIP-853).

A quorum formatted with static voters (``controller.quorum.voters``) runs
``kraft.version`` 0: the voter set is the configuration, not the log, and
AddRaftVoter / RemoveRaftVoter are refused. Kafka 4.x upgrades such a quorum
in place (``kafka-features.sh --bootstrap-controller H:P upgrade --feature
kraft.version=1``); the leader then appends one control batch with a
``KRaftVersionRecord`` (level 1) and a ``VotersRecord`` holding the static
voters with their directory ids, and from then on the voter set is the log's.

How the leader knows every voter can take it (Kafka's ``KRaftVersionUpgrade``
state in ``LeaderState``): under kraft.version 0 every voter sends
UpdateRaftVoter once per leader epoch with its directory id, listeners and
supported ``kraft.version`` range; the leader keeps these *upgrade voters*
in memory (``VoterSet.update_voter_ignoring_directory_id``) and writes
nothing. :func:`check_upgrade` is Kafka's
``LeaderState.maybeAppendUpgradedKRaftVersion``, in its order:

1. an upgrade already appended by this leader and not yet in the log: the
   same level again is a no-op, another level is refused ("Invalid
   concurrent upgrade");
2. the finalized level itself is a no-op; a lower one is a downgrade
   (refused);
3. without upgrade voters (no static voter set to upgrade from) refused;
4. the upgrade voters must be the voter set's ids (Kafka: an
   ``IllegalStateException``);
5. every voter must support the new level -- a voter that has not sent
   UpdateRaftVoter yet still has the static configuration's range (0, 0), so
   it does not -- ("not all of the voters support it");
6. every directory id must be known (Kafka: ``IllegalStateException``).

Refusals Kafka raises as ``InvalidUpdateVersionException`` are
:class:`InvalidUpdateVersionError` (the controller answers UpdateFeatures
with INVALID_UPDATE_VERSION and this message); Kafka's
``IllegalStateException`` cases are plain :class:`LocalRaftError`. Levels
print as Kafka's ``KRaftVersion`` enum constants (``KRAFT_VERSION_1``),
since Kafka formats the enum into these messages.

Pure: no I/O, no clock.
"""

from __future__ import annotations

from kraft.raft.errors import LocalRaftError
from kraft.raft.voters import VoterSet

__all__ = [
    "FEATURE_NAME",
    "LATEST_LEVEL",
    "InvalidUpdateVersionError",
    "level_name",
    "check_upgrade",
    "voters_not_supporting",
]

#: Kafka's ``KRaftVersion.FEATURE_NAME``.
FEATURE_NAME = "kraft.version"
#: The highest level Kafka (and kraft) knows: 1 enables KIP-853.
LATEST_LEVEL = 1


class InvalidUpdateVersionError(LocalRaftError):
    """Kafka's ``InvalidUpdateVersionException``: the feature level cannot
    be changed (now, or to that level)."""


def level_name(level: int) -> str:
    """A level as Kafka's ``KRaftVersion`` enum prints it."""
    return f"KRAFT_VERSION_{level}"


def check_upgrade(
    *,
    new_level: int,
    finalized_level: int,
    pending_level: int | None,
    upgrade_voters: VoterSet | None,
    voters: VoterSet,
) -> bool:
    """May the leader append the upgrade to ``new_level`` now? True: append
    it; False: nothing to do (already finalized or already appended). Raises
    :class:`InvalidUpdateVersionError` or :class:`LocalRaftError` (see the
    module docstring for the order of the checks).

    ``pending_level`` is the level this leader appended and the log has not
    made the finalized one yet; ``upgrade_voters`` the voters as their
    UpdateRaftVoter requests described them; ``voters`` the voter set in
    force."""
    if pending_level is not None:
        if pending_level == new_level:
            return False
        raise InvalidUpdateVersionError(
            f"Invalid concurrent upgrade of {FEATURE_NAME} from version {level_name(pending_level)} "
            f"to {level_name(new_level)}"
        )
    if new_level == finalized_level:
        return False
    if new_level < finalized_level:
        raise InvalidUpdateVersionError(
            f"Invalid upgrade of {FEATURE_NAME} from version {level_name(finalized_level)} to "
            f"{level_name(new_level)} because the new version is a downgrade"
        )
    # Only 0 -> 1 exists; a later level needs its own rules (as in Kafka).
    if upgrade_voters is None or new_level != LATEST_LEVEL or finalized_level != 0:
        raise InvalidUpdateVersionError(
            f"Invalid upgrade of {FEATURE_NAME} from version {level_name(finalized_level)} to "
            f"{level_name(new_level)}"
        )
    if upgrade_voters.voter_ids != voters.voter_ids:
        raise LocalRaftError(
            f"Unable to update {FEATURE_NAME} to {level_name(new_level)} due to missing voters "
            f"{list(upgrade_voters.voter_ids)} compared to {list(voters.voter_ids)}"
        )
    if not upgrade_voters.supports_version(new_level):
        raise InvalidUpdateVersionError(
            f"Invalid upgrade of {FEATURE_NAME} to {level_name(new_level)} because not all of the voters support it"
        )
    if any(key.directory_id is None for key in upgrade_voters.voter_keys):
        raise LocalRaftError(f"Directory id must be known for all of the voters: {upgrade_voters}")
    return True


def voters_not_supporting(upgrade_voters: VoterSet, level: int) -> list[int]:
    """The ids of the voters that have not said they support ``level`` (for
    the operator's log: Kafka logs the voter set with the refusal)."""
    return [node.key.id for node in upgrade_voters.voter_nodes if not node.supports(level)]
