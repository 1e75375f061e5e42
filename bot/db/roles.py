"""The database role a person's statements run under, for the length of one tool call.

The tool layer resolves the role from `[databases.access]` and sets it with `acting_as`;
every session the data layer opens for a database with an access map then starts with
`SET ROLE <role>` (or `SET ROLE NONE` outside any call), so whatever a call causes — its
statement, catalog reads, samples, plans, impact counts, the approved change — runs with
that role's privileges, and a pooled connection never carries one person's role to another.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING

from bot.sql.grants import SHOW_GRANTS, TABLE_PRIVILEGES, read_grants

if TYPE_CHECKING:
    from bot.db.session import Session

_acting: ContextVar[str | None] = ContextVar("dbagent_role", default=None)


def current_role() -> str | None:
    return _acting.get()


@contextmanager
def acting_as(role: str | None) -> Iterator[None]:
    token = _acting.set(role)
    try:
        yield
    finally:
        _acting.reset(token)


async def role_visibility(session: Session, schema: str) -> tuple[bool, bool]:
    """(TRIGGER held on `schema`, a table privilege held server-wide) through the session's
    role: information_schema's *_PRIVILEGES views list the login's own grants only, while
    SHOW GRANTS with a role set lists the role's too."""
    raw = await session.fetch(SHOW_GRANTS, limit=1_000)
    grants = read_grants([str(row[0]) for row in raw.rows])
    held = grants.held_on(schema, fold_case=False) | grants.server_wide()
    triggers = bool(held & {"TRIGGER", "ALL"})
    keys = bool(grants.server_wide() & (TABLE_PRIVILEGES | {"ALL"}))
    return triggers, keys
