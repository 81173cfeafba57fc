"""What the simulation and its invariant checkers need from a replica's log:
the :class:`~kraft.records.view.LogView` the core reads, the writes a shell
executes, a crash, and reads by offset for the checkers. Two logs provide it:
:class:`~kraft.sim.memlog.MemLog` (in memory) and
:class:`~kraft.sim.disklog.DiskLog` (the node's ``MetadataLog`` on real files).
"""

from __future__ import annotations

import random
from typing import Protocol

from kraft.raft.logops import LogOp
from kraft.records.kraft_control import KRaftControlHistory
from kraft.records.view import LogView


class SimLog(LogView, Protocol):
    #: Bumped whenever existing records are removed or replaced, so checkers
    #: may cache what they verified.
    generation: int

    @property
    def flushed_end_offset(self) -> int:
        """Offsets below this survive any crash (the last ``Flush``)."""
        ...

    @property
    def kraft_control(self) -> KRaftControlHistory: ...

    def entry_at(self, offset: int) -> tuple[int, bytes] | None:
        """(epoch, record identity) at ``offset``: from the log, or below the
        log start from the snapshot there; ``None`` past the log end."""
        ...

    def apply(self, op: LogOp) -> None:
        """Execute one log operation of a ``Ready``."""
        ...

    def crash_copy(self, rng: random.Random | None = None) -> SimLog:
        """The log as a crash leaves it (unflushed data may be lost)."""
        ...
