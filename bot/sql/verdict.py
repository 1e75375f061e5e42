"""The judgement of one statement while it is being built: risk, kind, reasons, targets."""

from __future__ import annotations

from collections.abc import Iterable

from bot.sql.risk import Risk, TableRef

# The whole server, written like MySQL's own "*.*": accounts, grants, plugins, replication,
# global settings. A guard comparing schemas sees "*" as foreign to any database.
SERVER = TableRef("*", "*")


def whole_schema(schema: str | None) -> TableRef:
    """A whole schema (CREATE/ALTER/DROP DATABASE, USE); None is the current one."""
    return TableRef(schema, "")


class Verdict:
    """Reasons and targets keep their order and hold no duplicates; the sets beside them keep
    adding one linear however many a statement collects."""

    __slots__ = (
        "_seen_reasons",
        "_seen_targets",
        "calls",
        "changes_reading",
        "dynamic",
        "kind",
        "reads",
        "reasons",
        "risk",
        "targets",
    )

    def __init__(self, risk: Risk, kind: str, reason: str | None = None) -> None:
        self.risk = risk
        self.kind = kind
        self.reasons: list[str] = [reason] if reason else []
        self.targets: list[TableRef] = []
        # Ordered sets, made on first use: most statements read few tables and call nothing,
        # and every container allocated here costs the garbage collector later.
        self.reads: dict[TableRef, None] | None = None
        self.calls: dict[TableRef, None] | None = None
        # It runs SQL text the classifier never sees (PREPARE, EXECUTE, EXECUTE IMMEDIATE).
        self.dynamic = False
        # It changes how the server reads the statements after it (sql_mode, character set).
        self.changes_reading = False
        self._seen_reasons: set[str] = set(self.reasons)
        self._seen_targets: set[TableRef] = set()

    def at_least(self, risk: Risk, reason: str) -> Verdict:
        """Raise the risk to ``risk`` (never lower it) and record why."""
        if risk.rank > self.risk.rank:
            if self.risk is Risk.READ_ONLY:
                self._clear_reasons()  # "only reads" no longer holds
            self.risk = risk
        self.add_reason(reason)
        return self

    def add_reason(self, reason: str) -> None:
        if reason and reason not in self._seen_reasons:
            self._seen_reasons.add(reason)
            self.reasons.append(reason)

    def add_targets(self, targets: list[TableRef] | tuple[TableRef, ...]) -> None:
        for target in targets:
            if target not in self._seen_targets:
                self._seen_targets.add(target)
                self.targets.append(target)

    def add_reads(self, reads: Iterable[TableRef]) -> None:
        for ref in reads:
            if self.reads is None:
                self.reads = {}
            self.reads[ref] = None

    def add_calls(self, calls: Iterable[TableRef]) -> None:
        for ref in calls:
            if self.calls is None:
                self.calls = {}
            self.calls[ref] = None

    def absorb(self, other: Verdict, prefix: str = "") -> None:
        """Take another verdict's risk, reasons, targets, reads and calls into this one (max
        of risks)."""
        if other.risk.rank > self.risk.rank:
            if self.risk is Risk.READ_ONLY:
                self._clear_reasons()
            self.risk = other.risk
        if other.risk is not Risk.READ_ONLY or self.risk is Risk.READ_ONLY:
            for reason in other.reasons:
                self.add_reason(prefix + reason)
        self.add_targets(other.targets)
        if other.reads:
            self.add_reads(other.reads)
        if other.calls:
            self.add_calls(other.calls)
        self.dynamic = self.dynamic or other.dynamic
        self.changes_reading = self.changes_reading or other.changes_reading

    def _clear_reasons(self) -> None:
        self.reasons.clear()
        self._seen_reasons.clear()


def read(kind: str, reason: str) -> Verdict:
    return Verdict(Risk.READ_ONLY, kind, reason)


def unknown(reason: str) -> Verdict:
    return Verdict(Risk.WRITE, "UNKNOWN", reason)
