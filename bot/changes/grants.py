"""The grant an approval gives: this SQL, in this session, within the rows each statement of
the approved call may change (what its impact stated, bot.changes.bounds), once or for the
thread as the decision said."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

from bot.changes.bounds import bounds_for
from bot.changes.types import PendingApproval
from bot.config import Settings
from bot.sql.risk import classify
from bot.state.grants import Grants, GrantScope

T = TypeVar("T")

# Parsing a short call takes well under a millisecond; a pasted script of thousands of rows
# would hold the event loop, so long SQL is parsed on a worker thread.
_PARSE_INLINE_CHARS = 4_000


async def off_the_loop(sql: str, work: Callable[..., T], *args: Any) -> T:
    """`work(*args)`, which parses `sql`: inline when it is short, else on a worker thread."""
    if len(sql) <= _PARSE_INLINE_CHARS:
        return work(*args)
    return await asyncio.to_thread(work, *args)


async def approved_bounds(settings: Settings, pending: PendingApproval) -> tuple[int, ...]:
    """The most rows each statement of an approved call may change."""
    classification = await off_the_loop(pending.sql, classify, pending.sql)
    statements = [statement.text for statement in classification.statements]
    approvals = settings.approvals
    return bounds_for(
        pending.impact,
        statements,
        margin=approvals.row_margin,
        unknown=approvals.max_rows_unknown,
    )


async def mint_grant(
    grants: Grants,
    settings: Settings,
    pending: PendingApproval,
    scope: GrantScope,
    approver: str,
) -> None:
    """The grant an approval gives: this SQL, this session, within its impact's row counts."""
    bounds = await approved_bounds(settings, pending)
    await grants.mint(
        pending.session_id, pending.database, pending.sql, scope, approver, bounds, pending.id
    )
