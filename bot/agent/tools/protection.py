"""Data protection in the tool layer, keyed by the person a call acts for (user id and user
groups), so every entry point that runs the tools gets it: Slack, the console, MCP.

- `channels`: a database configured with channels is used only in them.
- Masked columns: each statement is judged (bot.sql.masking) before it runs, and every
  result is masked before it leaves the data layer's hands (rows for the model and the
  person, charts and CSV built from them, a change's preview on its card, server errors).
  People in the database's `unmasked_for` see raw values.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, replace

from bot.agent.outcomes import Requester
from bot.config import DatabaseConfig
from bot.db.database import Database
from bot.db.impact_types import Impact
from bot.db.masking import mask_impact, mask_result, masker, redact_error
from bot.db.types import Execution, ResultSet
from bot.sql.masking import Masker, MaskPlan, Refusal
from bot.sql.risk import Statement

_INLINE_CHARS = 4_000


def channel_of(session_id: str) -> str | None:
    """The channel of a session id "team:channel:thread_ts", None when it names none."""
    parts = session_id.split(":")
    return parts[1] if len(parts) >= 3 and parts[1] else None


def place_refusal(config: DatabaseConfig, session_id: str) -> str | None:
    """Why `config`'s database may not be used in this conversation, or None."""
    if config.channels is None:
        return None
    channel = channel_of(session_id)
    if channel is not None and channel in config.channels:
        return None
    where = ", ".join(f"<#{c}>" for c in config.channels) or "no channel"
    return (
        f"Blocked: {config.name} may be used only in {where} (its `channels` setting): "
        "results are posted where the question was asked. Ask there."
    )


def sees_raw(config: DatabaseConfig, requester: Requester) -> bool:
    allowed = set(config.unmasked_for)
    return requester.user_id in allowed or bool(allowed & set(requester.groups))


@dataclass(frozen=True, slots=True)
class Protection:
    """The masking of one call: None when this person sees raw values or nothing is masked."""

    masker: Masker | None

    @property
    def active(self) -> bool:
        return self.masker is not None

    async def judge(self, statements: Sequence[Statement]) -> list[MaskPlan] | str:
        """A plan per statement, or the refusal ("Blocked: …") of the first refused one.
        Tracing costs well under a millisecond for a short statement; long text is traced
        on a worker thread, off the event loop."""
        if self.masker is None:
            return [MaskPlan() for _ in statements]
        if sum(len(statement.text) for statement in statements) > _INLINE_CHARS:
            return await asyncio.to_thread(self._judge, statements)
        return self._judge(statements)

    def _judge(self, statements: Sequence[Statement]) -> list[MaskPlan] | str:
        assert self.masker is not None
        plans = []
        for statement in statements:
            reads = (*statement.reads, *statement.targets)
            plan = self.masker.plan(statement.text, reads)
            if isinstance(plan, Refusal):
                return refusal(plan)
            plans.append(plan)
        return plans

    def table(self, table: str) -> MaskPlan | str:
        if self.masker is None:
            return MaskPlan()
        plan = self.masker.table_plan(table)
        return refusal(plan) if isinstance(plan, Refusal) else plan

    def execution(self, run: Execution, plans: Sequence[MaskPlan]) -> Execution:
        """`run` with every result masked by its statement's plan (MaskedResult if one is not
        as wide as traced)."""
        if self.masker is None:
            return run
        outcomes = []
        for index, outcome in enumerate(run.outcomes):
            plan = plans[index] if index < len(plans) else MaskPlan(width=-1)
            outcomes.append(replace(outcome, result=mask_result(outcome.result, plan)))
        return replace(run, outcomes=tuple(outcomes))

    def result(self, result: ResultSet, plan: MaskPlan) -> ResultSet:
        masked = mask_result(result, plan)
        assert masked is not None
        return masked

    def impact(self, impact: Impact | None) -> Impact | None:
        return impact if self.masker is None else mask_impact(impact, self.masker)

    def error(self, message: str) -> str:
        return message if self.masker is None else redact_error(message)

    def holds_masked(self, tables: Sequence[str]) -> bool:
        return self.masker is not None and any(self.masker.holds_masked(t) for t in tables)


def note(plans: Sequence[MaskPlan], columns: Sequence[str] = ()) -> str:
    """One line: which output columns were masked and why ("" when none was)."""
    parts = []
    for plan in plans:
        for masked in plan.masked:
            name = columns[masked.position] if masked.position < len(columns) else "?"
            why = "; ".join(f"{s}: {plan.reasons.get(s, 'masked')}" for s in masked.sources)
            parts.append(f"{name} ({why})")
    if not parts:
        return ""
    return "Masked: " + ", ".join(dict.fromkeys(parts)) + "."


def refusal(plan: Refusal) -> str:
    return (
        f"Blocked: this database has masked columns and {plan.reason}. Masked values may "
        "be shown (masked) but never used to pick, group or order rows, nor copied."
    )


async def protection(db: Database, requester: Requester) -> Protection:
    """How this person's call on `db` is masked."""
    if sees_raw(db.config, requester):
        return Protection(None)
    found = await masker(db)
    return Protection(found if found.active else None)
