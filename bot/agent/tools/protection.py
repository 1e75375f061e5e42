"""Data protection in the tool layer, keyed by the person a call acts for (user id and user
groups), so every entry point that runs the tools gets it: Slack, the console, MCP.

- `channels`: a database configured with channels is used only in them.
- `[databases.access]`: the person's database role; everything the call causes runs under
  it (`for_person` sets it for the data layer, bot.db.roles); people it does not name are
  refused, and a refusal by the server for a missing privilege is told in words.
- Masked columns: each statement is judged (bot.sql.masking) before it runs, and every
  result is masked before it leaves the data layer's hands (rows for the model and the
  person, charts and CSV built from them, a change's preview on its card, server errors).
  People in the database's `unmasked_for` see raw values.
"""

from __future__ import annotations

import asyncio
import functools
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol, TypeVar

from bot.agent.outcomes import Requester
from bot.agent.tools.base import ToolContext, ToolReply, error
from bot.config import DatabaseConfig
from bot.db.database import Database
from bot.db.impact_types import Impact
from bot.db.masking import mask_impact, mask_result, masker, redact_error
from bot.db.roles import acting_as, current_role
from bot.db.types import Execution, MissingPrivilege, ResultSet
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


class NoAccess(Exception):
    """The person has no role on a database with an access map."""


def role_for(config: DatabaseConfig, requester: Requester) -> str | None:
    """The person's role on `config`'s database: by user ID, then by user group (in the
    map's order), then "*"; None without an access map; NoAccess when it names neither."""
    if not config.access:
        return None
    if requester.user_id in config.access:
        return config.access[requester.user_id]
    groups = set(requester.groups)
    for who, role in config.access.items():
        if who in groups:
            return role
    if "*" in config.access:
        return config.access["*"]
    raise NoAccess(
        f"Blocked: you have no database role on {config.name}: its [databases.access] names "
        "neither you nor a user group of yours. Ask whoever runs dbagent to add you."
    )


_DENIED = re.compile(
    r"(?P<command>[A-Z ]+?) command denied to user \S+ for "
    r"(?:column '(?P<column>[^']+)' in )?table (?P<table>.+?)\s*$"
)
_DATABASE = re.compile(r"to database '(?P<schema>[^']+)'")


def privilege_message(exc: MissingPrivilege, database: str, schema: str | None = None) -> str:
    """The server's refusal for a missing privilege, in words naming what is missing and
    who can grant it."""
    role = current_role()
    holder = f"your database role {role}" if role else "the bot's database account"
    grantee = role or "the bot's account"
    denied = _DENIED.search(exc.server)
    if denied is not None:
        command, column = denied["command"].strip(), denied["column"]
        table = denied["table"]
        if "`" not in table:  # 'customers': the table of the database's own schema
            bare = table.strip("'")
            table = f"`{schema}`.`{bare}`" if schema else f"`{bare}`"
        what = f"{command} ({column}) ON {table}" if column else f"{command} ON {table}"
        missing = f"{command} on column {column} of {table}" if column else f"{command} on {table}"
    else:
        named = _DATABASE.search(exc.server)
        target = f"`{named['schema']}`.*" if named else f"`{schema}`.*" if schema else "…"
        what, missing = f"… ON {target}", f"access to {target}"
    return (
        f"Blocked: {holder} may not do this on {database}: it lacks {missing} "
        f"(the server said: {exc.server}). A database administrator (an account with GRANT "
        f"OPTION there) can grant it: GRANT {what} TO {grantee}; or you can be mapped to a "
        "role that has it in [databases.access]."
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


class _OnDatabase(Protocol):
    @property
    def database(self) -> str: ...


A = TypeVar("A", bound=_OnDatabase)
Out = TypeVar("Out")


def for_person(
    handler: Callable[[ToolContext, A], Awaitable[Out]],
) -> Callable[[ToolContext, A], Awaitable[Out | ToolReply]]:
    """A tool handler run for the person the call acts for: refused outside the database's
    `channels` and without a role in its access map; else run under that role."""

    @functools.wraps(handler)
    async def run(context: ToolContext, args: A) -> Out | ToolReply:
        config = context.databases.get(args.database).config
        place = place_refusal(config, context.session_id)
        if place is not None:
            return error(place)
        try:
            role = role_for(config, context.requester)
        except NoAccess as refused:
            role = None
            if context.approver is None or current_role() is None:
                return error(str(refused))
        if context.approver is not None and current_role() is not None:
            role = current_role()  # an approved change runs under the role its card showed
        with acting_as(role):
            try:
                return await handler(context, args)
            except MissingPrivilege as exc:
                return error(privilege_message(exc, config.name, config.schema_name))

    return run


MASKED_NOTE = (
    "values of these columns show as [masked] to this person; using them in WHERE, JOIN, "
    "GROUP BY, ORDER BY, HAVING or a window's PARTITION/ORDER BY is refused"
)


async def masked_columns(db: Database, requester: Requester, table: str) -> list[str]:
    """The columns of `table` shown masked to this person, with why ("" reasons when none)."""
    found = await protection(db, requester)
    plan = found.table(table)
    if isinstance(plan, str) or not plan.masked or found.masker is None:
        return []
    columns = found.masker.facts.tables
    key = next(
        (
            k
            for k in columns
            if k[0].lower() == found.masker.schema and k[1].lower() == table.lower()
        ),
        None,
    )
    names = columns[key].columns if key is not None else ()
    return [
        f"{names[c.position] if c.position < len(names) else c.position}: "
        + "; ".join(f"{s} ({plan.reasons.get(s, 'masked')})" for s in c.sources)
        for c in plan.masked
    ]
