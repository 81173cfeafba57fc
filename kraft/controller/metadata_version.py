"""Kafka's ``MetadataVersion`` (server-common, Kafka 4.4): the feature
levels of ``metadata.version``, their names, and what each level lets the
controller write -- which record versions, and which features (ELR, metadata
transactions, directory assignment, ...). The controller decides every
record's version here, as Kafka's control managers ask ``MetadataVersion``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MetadataVersion", "MINIMUM", "LATEST_PRODUCTION", "LATEST", "by_level", "by_name"]

#: (level, release name, didMetadataChange) in Kafka 4.4's order.
_LEVELS: tuple[tuple[int, str, bool], ...] = (
    (7, "3.3-IV3", True), (8, "3.4-IV0", True), (9, "3.5-IV0", False), (10, "3.5-IV1", False),
    (11, "3.5-IV2", True), (12, "3.6-IV0", False), (13, "3.6-IV1", True), (14, "3.6-IV2", True),
    (15, "3.7-IV0", True), (16, "3.7-IV1", False), (17, "3.7-IV2", True), (18, "3.7-IV3", False),
    (19, "3.7-IV4", False), (20, "3.8-IV0", False), (21, "3.9-IV0", False), (22, "4.0-IV0", False),
    (23, "4.0-IV1", True), (24, "4.0-IV2", False), (25, "4.0-IV3", False), (26, "4.1-IV0", False),
    (27, "4.1-IV1", False), (28, "4.2-IV0", False), (29, "4.2-IV1", False), (30, "4.3-IV0", True),
    (31, "4.4-IV0", False), (32, "4.4-IV1", True), (33, "4.4-IV2", True),
)


@dataclass(frozen=True, slots=True, order=True)
class MetadataVersion:
    """One ``metadata.version`` feature level (``IBP_4_4_IV2`` is level 33)."""

    level: int
    name: str

    def __str__(self) -> str:
        return self.name

    def is_at_least(self, name: str) -> bool:
        return self.level >= by_name(name).level

    # ---- what the level supports (MetadataVersion.isXxxSupported)

    @property
    def is_scram_supported(self) -> bool:
        return self.level >= 11  # IBP_3_5_IV2

    @property
    def is_leader_epoch_bump_required_on_isr_shrink(self) -> bool:
        return self.level < 12  # before IBP_3_6_IV0

    @property
    def is_metadata_transaction_supported(self) -> bool:
        return self.level >= 13  # IBP_3_6_IV1

    @property
    def is_delegation_token_supported(self) -> bool:
        return self.level >= 14  # IBP_3_6_IV2

    @property
    def is_controller_registration_supported(self) -> bool:
        return self.level >= 15  # IBP_3_7_IV0

    @property
    def is_directory_assignment_supported(self) -> bool:
        return self.level >= 17  # IBP_3_7_IV2

    @property
    def is_elr_supported(self) -> bool:
        return self.level >= 23  # IBP_4_0_IV1

    @property
    def is_cordoned_log_dirs_supported(self) -> bool:
        return self.level >= 30  # IBP_4_3_IV0

    @property
    def is_cidr_acl_supported(self) -> bool:
        return self.level >= 32  # IBP_4_4_IV1

    @property
    def is_controller_unregistration_supported(self) -> bool:
        return self.level >= 33  # IBP_4_4_IV2

    # ---- record versions (MetadataVersion.xxxRecordVersion)

    @property
    def register_broker_record_version(self) -> int:
        if self.is_cordoned_log_dirs_supported:
            return 4
        if self.is_directory_assignment_supported:
            return 3
        return 2 if self.level >= 8 else 1  # isMigrationSupported: IBP_3_4_IV0

    @property
    def partition_record_version(self) -> int:
        if self.is_elr_supported:
            return 2
        return 1 if self.is_directory_assignment_supported else 0

    @property
    def partition_change_record_version(self) -> int:
        return self.partition_record_version


_BY_LEVEL = {level: MetadataVersion(level, name) for level, name, _ in _LEVELS}
_BY_NAME = {mv.name: mv for mv in _BY_LEVEL.values()}

#: ``MetadataVersion.MINIMUM_VERSION`` (4.x: 3.3-IV3).
MINIMUM = _BY_LEVEL[7]
#: ``MetadataVersion.LATEST_PRODUCTION`` of Kafka 4.4.
LATEST_PRODUCTION = _BY_LEVEL[33]
LATEST = _BY_LEVEL[33]


def by_level(level: int) -> MetadataVersion:
    """The version of a feature level; a level this table lacks (newer than
    4.4, or below 3.3-IV3) is kept with its number as its name."""
    return _BY_LEVEL.get(level) or MetadataVersion(level, f"feature level {level}")


def by_name(name: str) -> MetadataVersion:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown metadata.version {name!r}") from None
