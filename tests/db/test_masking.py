"""What the data layer reads to judge masked columns: columns in order, their comments and
view definitions, per database (and role), kept a few seconds; and masks applied to rows."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.config import Limits
from bot.db import Database, DatabaseRegistry
from bot.db.masking import MaskedResult, mask_result, masker, redact_error
from bot.db.types import ResultSet
from bot.sql.masking import MASK, MaskedColumn, MaskPlan
from tests.db.support import staging
from tests.server_roles import run_statements


@pytest.fixture
async def scratch_db(scratch_url: str, mysql_url: str) -> AsyncIterator[tuple[Database, str]]:
    schema = scratch_url.rsplit("/", 1)[1]
    await run_statements(
        mysql_url,
        [
            f"CREATE TABLE {schema}.people (id INT, name TEXT, iban TEXT COMMENT 'IBAN [Masked]')",
            f"CREATE VIEW {schema}.v AS SELECT id, iban FROM {schema}.people",
        ],
    )
    registry = DatabaseRegistry([staging(scratch_url, name="scratch")], Limits())
    yield registry.get("scratch"), schema
    await registry.close()


async def test_a_comment_alone_masks_and_views_are_read_from_the_server(
    scratch_db: tuple[Database, str],
) -> None:
    db, _ = scratch_db
    found = await masker(db, max_age_s=0)
    assert found.active and found.reasons == {"people.iban": "[masked] in its comment"}
    plan = found.plan("SELECT * FROM v")
    assert isinstance(plan, MaskPlan) and plan.positions == {1}
    assert await masker(db) is found  # kept for a few seconds


async def test_without_globs_or_marked_comments_nothing_is_masked(
    scratch_url: str, mysql_url: str
) -> None:
    schema = scratch_url.rsplit("/", 1)[1]
    await run_statements(mysql_url, [f"CREATE TABLE {schema}.plain (id INT, email TEXT)"])
    registry = DatabaseRegistry([staging(scratch_url, name="plain")], Limits())
    try:
        found = await masker(registry.get("plain"), max_age_s=0)
    finally:
        await registry.close()
    assert not found.active and found.plan("SELECT email FROM plain WHERE email = 'x'") == (
        MaskPlan()
    )


def test_masks_replace_values_but_keep_null_and_refuse_a_width_not_traced() -> None:
    result = ResultSet(("id", "email"), ((1, "a@b.c"), (2, None)), truncated=False)
    plan = MaskPlan(width=2, masked=(MaskedColumn(1, ("people.email",)),))
    masked = mask_result(result, plan)
    assert masked is not None and masked.rows == ((1, MASK), (2, None))
    with pytest.raises(MaskedResult):
        mask_result(ResultSet(("id",), ((1,),), truncated=False), plan)
    assert mask_result(result, MaskPlan()) is result


def test_quoted_values_leave_server_errors() -> None:
    message = "MariaDB error 1062: Duplicate entry 'a@b.c' for key 'email'"
    assert redact_error(message) == "MariaDB error 1062: Duplicate entry '…' for key '…'"
