"""What ``kraft doctor`` reports: findings as data.

A :class:`Finding` is one thing wrong (or worth a look) with a quorum: its
severity, a stable code scripts can match on, what is wrong in one sentence,
the evidence it rests on (node ids, offsets, values) and, where one exists,
the command that fixes it. Checks return findings; the command prints them,
one line each, or as JSON, and turns them into an exit status.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kraft.errors import EXIT_TOOL_FIRST

__all__ = ["Severity", "Finding", "exit_status", "format_line", "as_json", "EXIT_HEALTHY", "EXIT_ERROR",
           "EXIT_WARNING"]

EXIT_HEALTHY = 0
EXIT_ERROR = 1
#: Warnings only: doctor's own outcome, clear of the exit codes every tool
#: shares (2 usage, 3 config, 5 network, 130 interrupted).
EXIT_WARNING = EXIT_TOOL_FIRST


class Severity(enum.Enum):
    """ERROR: the quorum is broken or about to be; WARNING: it works, but
    one more failure or a little more time will hurt."""

    ERROR = "ERROR"
    WARNING = "WARNING"


@dataclass(frozen=True, slots=True)
class Finding:
    severity: Severity
    #: Stable, kebab-case: what scripts match on (``voter-unreachable``, ...).
    code: str
    #: What is wrong, one sentence.
    what: str
    #: The values the finding rests on, by name (node ids, offsets, paths).
    evidence: Mapping[str, Any] = field(default_factory=dict)
    #: The command (or edit) that fixes it, when there is one.
    fix: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"severity": self.severity.value, "code": self.code, "what": self.what,
                "evidence": dict(self.evidence), "fix": self.fix}


def _value(v: Any) -> str:
    if isinstance(v, (list, tuple, set, frozenset)):
        return "[" + ",".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ",".join(f"{k}={_value(x)}" for k, x in v.items()) + "}"
    return str(v)


def format_line(finding: Finding) -> str:
    """``SEVERITY code: what (evidence: k=v, ...) fix: command`` on one line."""
    line = f"{finding.severity.value:<7} {finding.code}: {finding.what}"
    if finding.evidence:
        line += " (" + ", ".join(f"{k}={_value(v)}" for k, v in finding.evidence.items()) + ")"
    if finding.fix:
        line += f" fix: {finding.fix}"
    return line


def exit_status(findings: Iterable[Finding]) -> int:
    """0 healthy, 1 when any finding is an error, 10 for warnings only."""
    severities = {f.severity for f in findings}
    if Severity.ERROR in severities:
        return EXIT_ERROR
    if Severity.WARNING in severities:
        return EXIT_WARNING
    return EXIT_HEALTHY


def as_json(findings: Iterable[Finding], checked: Mapping[str, Any]) -> dict[str, Any]:
    """The ``--json`` document: what was checked, the findings, the status."""
    items = list(findings)
    return {"checked": dict(checked), "findings": [f.to_dict() for f in items], "status": exit_status(items)}
