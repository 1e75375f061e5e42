"""One `decide` for every kind of card, on a real store: who may approve, when the count is
complete, what a deny and an expired card do, and which grant the approval gives. One row per
case, the reason in the row."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from bot.changes.decide import decide
from bot.changes.types import (
    DIRECT,
    TOOL_CALL,
    UNDO,
    AlreadyDecided,
    ApprovalExpired,
    Approved,
    Counted,
    Denied,
    PendingApproval,
    SelfApprovalRefused,
    Verdict,
)
from bot.config import Approvals
from bot.state import GrantScope, State

ASKER, ALICE, BOB = "U0ASKER", "U0ALICE", "U0BOB"
TTL_S = 3600.0
ONCE, THREAD = GrantScope.ONCE, GrantScope.THREAD


def card(kind: str, **fields: object) -> PendingApproval:
    pending = PendingApproval(
        id=f"p-{kind}-{time.monotonic_ns()}",
        session_id="s-1",
        tool_call_id="call-1" if kind == TOOL_CALL else "",
        database="shop-staging",
        environment="staging",
        risk="write",
        sql="UPDATE orders SET status = 'x' WHERE id = 11",
        requester=ASKER,
        created_at=time.time(),
        kind=kind,
    )
    return replace(pending, **fields)  # type: ignore[arg-type]


async def click(
    state: State,
    pending: PendingApproval,
    approver: str,
    scope: GrantScope | None,
    approvals: Approvals,
) -> tuple[Verdict, list[str]]:
    expired: list[str] = []

    async def expire(pending_id: str) -> None:
        expired.append(pending_id)
        await state.pending.claim(pending_id)

    async def carry_out(verdict: Verdict) -> Verdict:
        return verdict

    verdict = await decide(
        state,
        pending.id,
        approver=approver,
        scope=scope,
        approvals=approvals,
        ttl_s=TTL_S,
        expire=expire,
        carry_out=carry_out,
    )
    return verdict, expired


KINDS = [TOOL_CALL, DIRECT, UNDO]
CASES = [
    # (card fields, approvals, approver, scope, verdict type, its grant, why)
    ({}, Approvals(), ALICE, ONCE, Approved, ONCE, "another person approves once"),
    ({}, Approvals(), ALICE, THREAD, Approved, THREAD, "another person grants the thread"),
    ({}, Approvals(), ASKER, ONCE, SelfApprovalRefused, None, "four eyes: not the asker"),
    (
        {},
        Approvals(allow_self_approval=True),
        ASKER,
        ONCE,
        Approved,
        ONCE,
        "self-approval when configured",
    ),
    (
        {"origin": "mcp:laptop"},
        Approvals(allow_self_approval=True),
        ASKER,
        ONCE,
        SelfApprovalRefused,
        None,
        "an outside client's change always needs someone else",
    ),
    (
        {"origin": "mcp:laptop"},
        Approvals(),
        ALICE,
        THREAD,
        Approved,
        ONCE,
        "an outside client's change is approved once only",
    ),
    ({}, Approvals(), ASKER, None, Denied, None, "the asker may deny their own change"),
    ({}, Approvals(required=2), ALICE, ONCE, Counted, None, "one of two approvers: counted"),
    (
        {"approvals": (ALICE,), "scopes": ("thread",), "required": 2},
        Approvals(),
        BOB,
        THREAD,
        Approved,
        THREAD,
        "the second of two, both for the thread",
    ),
    (
        {"approvals": (ALICE,), "scopes": ("once",), "required": 2},
        Approvals(),
        BOB,
        THREAD,
        Approved,
        ONCE,
        "a thread grant needs every approver to choose it",
    ),
    (
        {"approvals": (ALICE,), "scopes": ("once",), "required": 2},
        Approvals(),
        ALICE,
        ONCE,
        Counted,
        None,
        "an approver counts once",
    ),
    (
        {"approvals": (ALICE,), "scopes": ("once",), "required": 2},
        Approvals(),
        BOB,
        None,
        Denied,
        None,
        "a deny ends a card that had approvals",
    ),
    ({"required": 1}, Approvals(required=2), ALICE, ONCE, Counted, None, "config now asks more"),
    (
        {"created_at": time.time() - TTL_S - 1},
        Approvals(),
        ALICE,
        ONCE,
        ApprovalExpired,
        None,
        "past its lifetime: expired, not decided",
    ),
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("fields", "approvals", "approver", "scope", "expected", "grant", "why"),
    CASES,
    ids=[case[-1] for case in CASES],
)
async def test_a_click_is_decided_by_the_same_rules_for_every_kind_of_card(
    state: State,
    kind: str,
    fields: dict[str, object],
    approvals: Approvals,
    approver: str,
    scope: GrantScope | None,
    expected: type,
    grant: GrantScope | None,
    why: str,
) -> None:
    pending = card(kind, **fields)
    await state.pending.add(pending.to_json())

    if issubclass(expected, Exception):
        with pytest.raises(expected):
            await click(state, pending, approver, scope, approvals)
        left = await state.pending.get(pending.id)
        assert (left is None) == (expected is ApprovalExpired), why
        return
    verdict, expired = await click(state, pending, approver, scope, approvals)

    assert isinstance(verdict, expected), (why, verdict)
    assert expired == [], why
    assert verdict.pending.id == pending.id, why
    if isinstance(verdict, Approved):
        assert verdict.scope is grant, why
    # Counted: the card stays for the next approver; decided: no second click can take it.
    assert (await state.pending.get(pending.id) is not None) == (expected is Counted), why


async def test_a_card_already_decided_is_not_decided_again(state: State) -> None:
    pending = card(DIRECT)
    await state.pending.add(pending.to_json())
    await click(state, pending, ALICE, ONCE, Approvals())

    with pytest.raises(AlreadyDecided):
        await click(state, pending, BOB, ONCE, Approvals())
