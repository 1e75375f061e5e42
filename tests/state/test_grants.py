"""Grants bind (session, database, exact SQL); one-time grants are spent exactly once."""

from __future__ import annotations

import asyncio

import pytest

from bot.config import Limits
from bot.state.grants import Grants, GrantScope, sql_digest
from tests.state.conftest import OpenState

SQL = "UPDATE orders SET status = 'shipped' WHERE id = 7"


@pytest.fixture
async def grants(open_backend: OpenState) -> Grants:
    state = await open_backend(limits=Limits(once_grant_ttl_s=60, thread_grant_ttl_s=600))
    return state.grants


async def test_a_one_time_grant_is_consumed_by_its_first_use(grants):
    await grants.mint("s1", "shop", SQL, GrantScope.ONCE, "U1")
    assert await grants.consume("s1", "shop", SQL) is True
    assert await grants.consume("s1", "shop", SQL) is False


async def test_racing_consumers_of_one_grant_let_exactly_one_win(grants):
    await grants.mint("s1", "shop", SQL, GrantScope.ONCE, "U1")
    wins = await asyncio.gather(*(grants.consume("s1", "shop", SQL) for _ in range(50)))
    assert wins.count(True) == 1


async def test_a_thread_grant_matches_again_until_it_expires(grants, clock):
    await grants.mint("s1", "shop", SQL, GrantScope.THREAD, "U1")
    assert await grants.consume("s1", "shop", SQL)
    assert await grants.consume("s1", "shop", SQL)
    clock.now += 601
    assert await grants.consume("s1", "shop", SQL) is False


async def test_surrounding_whitespace_is_trimmed_before_hashing(grants):
    await grants.mint("s1", "shop", SQL, GrantScope.ONCE, "U1")
    assert await grants.consume("s1", "shop", f"\n  {SQL}  \n")


async def test_a_thread_grant_is_used_before_a_one_time_grant(grants):
    await grants.mint("s1", "shop", SQL, GrantScope.ONCE, "U1")
    await grants.mint("s1", "shop", SQL, GrantScope.THREAD, "U1")
    assert await grants.consume("s1", "shop", SQL)
    assert await grants.consume("s1", "shop", SQL)
    assert await grants.consume("s1", "shop", SQL)


MISMATCHES = [
    # (session, database, sql, reason)
    ("s2", "shop", SQL, "another session (thread) must ask again"),
    ("s1", "shop-other", SQL, "another database is another risk"),
    ("s1", "shop", SQL.replace("7", "8"), "SQL differing by one character"),
    ("s1", "shop", SQL + ";", "a trailing semicolon is a different text"),
    ("s1", "shop", SQL.lower(), "case matters: the exact text was approved"),
    ("s1", "shop", SQL + "\u00a0", "a no-break space is part of a name, not whitespace"),
]


@pytest.mark.parametrize(("session", "database", "sql", "reason"), MISMATCHES)
async def test_a_grant_matches_nothing_else(grants, session, database, sql, reason):
    await grants.mint("s1", "shop", SQL, GrantScope.THREAD, "U1")
    assert await grants.consume(session, database, sql) is False, reason


async def test_an_expired_one_time_grant_matches_nothing(grants, clock):
    await grants.mint("s1", "shop", SQL, GrantScope.ONCE, "U1")
    clock.now += 61
    assert await grants.consume("s1", "shop", SQL) is False


async def test_grants_survive_a_restart(open_backend: OpenState) -> None:
    first = await open_backend()
    await first.grants.mint("s1", "shop", SQL, GrantScope.ONCE, "U1")
    await first.close()
    assert await (await open_backend()).grants.consume("s1", "shop", SQL)


async def test_live_tells_without_consuming(grants: Grants) -> None:
    await grants.mint("s1", "shop", SQL, GrantScope.ONCE, "U1")
    assert await grants.live("s1", "shop", SQL)
    assert await grants.live("s1", "shop", SQL)
    assert await grants.consume("s1", "shop", SQL)
    assert not await grants.live("s1", "shop", SQL)


async def test_expired_grants_are_pruned(grants: Grants, clock) -> None:
    await grants.mint("s1", "shop", SQL, GrantScope.ONCE, "U1")
    clock.now += 61
    await grants.prune(100)
    assert not await grants.live("s1", "shop", SQL)


def test_the_digest_is_sha256_of_the_trimmed_text():
    import hashlib

    assert sql_digest("  SELECT 1 \n") == hashlib.sha256(b"SELECT 1").hexdigest()


CLAIMED = [
    # (scope, what a claim does after the claimed execution released it, why)
    (GrantScope.ONCE, False, "a one-time grant was spent by the claim: release gives nothing back"),
    (GrantScope.THREAD, True, "a thread grant held by the claim matches again once released"),
]


@pytest.mark.parametrize(("scope", "again", "why"), CLAIMED, ids=[c[0].value for c in CLAIMED])
async def test_a_claimed_grant_after_its_release(grants, scope, again, why):
    await grants.mint("s1", "shop", SQL, scope, "U1")
    claim = await grants.claim("s1", "shop", SQL)
    assert claim is not None and claim.scope is scope
    assert await grants.claim("s1", "shop", SQL) is None, "held or spent while it runs"

    await grants.release(claim.id)

    second = await grants.claim("s1", "shop", SQL)
    assert (second is not None) is again, why
    if second is not None:
        await grants.release(second.id)
    assert await grants.consume("s1", "shop", SQL) is again, why
