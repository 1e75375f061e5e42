"""Who may approve a change, and when an approver's decision settles it: one `decide` for
every kind of request (a model's paused call, a statement a person ran, an Undo).

Four eyes: the person who asked may not approve (unless `allow_self_approval`, and never for
an outside client's change); each approver is counted once; the approval that completes the
count, or a deny, takes the record in one step of the store (exactly one decision can). An
approval past its lifetime is expired, not decided. A thread grant needs every approver to
choose it, and an outside client's change is approved once only.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import replace
from typing import Any, TypeVar

from bot.changes.types import (
    DIRECT,
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
from bot.config import Approvals, Environment
from bot.observability import observe
from bot.state import GrantScope, State
from bot.state.audit import AuditLog

T = TypeVar("T")

SELF_APPROVAL = (
    "You asked for this change, so you cannot approve it yourself: another approver must "
    "(four eyes)."
)


async def decide(
    state: State,
    pending_id: str,
    *,
    approver: str,
    scope: GrantScope | None,
    approvals: Approvals,
    ttl_s: float,
    expire: Callable[[str], Awaitable[object]],
    carry_out: Callable[[Verdict], Awaitable[T]],
) -> T:
    """`approver`'s decision on the pending change `pending_id`: an approval with the grant `scope`
    they chose, or a deny (`scope` None). Raises AlreadyDecided when it is gone,
    ApprovalExpired (after `expire`) when it is past its lifetime, SelfApprovalRefused when
    the asker may not approve it; otherwise `carry_out` gets the verdict. A model's paused
    call is claimed and carried out holding its session's lease, so no message in the
    thread can come between the decision and the run it resumes."""
    record = await state.pending.get(pending_id)
    if record is None:
        raise AlreadyDecided(pending_id)
    if time.time() - float(record.get("created_at") or 0) > ttl_s:
        await expire(pending_id)
        raise ApprovalExpired(pending_id)
    pending = PendingApproval.from_json(record)
    if scope is not None:
        may_approve(pending, approver, approvals)
    hold: AbstractAsyncContextManager[None] = (
        nullcontext() if pending.kind in (DIRECT, UNDO) else state.leases.hold(pending.session_id)
    )
    async with hold:
        return await carry_out(await tally(state, pending_id, approver, scope, approvals))


def may_approve(pending: PendingApproval, approver: str, approvals: Approvals) -> None:
    """Raises SelfApprovalRefused when `approver` asked for the change and may not approve
    it. A change an outside client (MCP) asked for always needs someone else: the person
    behind the client may not have read what their agent proposed."""
    allowed = approvals.allow_self_approval and not pending.origin
    if allowed or approver != pending.requester:
        return
    raise SelfApprovalRefused(pending.id, SELF_APPROVAL)


def required(pending: PendingApproval, approvals: Approvals) -> int:
    """How many distinct approvers the change needs: what it was created with, or
    more if the configuration now asks for more."""
    try:
        environment = Environment(pending.environment)
    except ValueError:
        return max(pending.required, approvals.required)
    return max(pending.required, approvals.required_for(environment))


def narrowest(chosen: tuple[str, ...], scope: GrantScope) -> GrantScope:
    """A thread grant only when every approver chose it."""
    if scope is GrantScope.ONCE or GrantScope.ONCE.value in chosen:
        return GrantScope.ONCE
    return GrantScope.THREAD


async def tally(
    state: State,
    pending_id: str,
    approver: str,
    scope: GrantScope | None,
    approvals: Approvals,
) -> Verdict:
    """One atomic step of the store: a deny, or the approval that completes the count, takes
    the record (exactly one decision can); an earlier approval is counted (once per person)
    and the record stays, awaiting the next approver."""

    def count(
        data: dict[str, Any],
    ) -> tuple[dict[str, Any] | None, tuple[bool, PendingApproval]]:
        pending = PendingApproval.from_json(data)
        if scope is None:
            return None, (True, pending)
        if approver not in pending.approvals:
            pending = replace(
                pending,
                approvals=(*pending.approvals, approver),
                scopes=(*pending.scopes, scope.value),
            )
        if len(pending.approvals) >= required(pending, approvals):
            return None, (True, pending)
        return pending.to_json(), (False, pending)

    found, claimed = await state.pending.update(pending_id, count)
    if not found or claimed is None:
        raise AlreadyDecided(pending_id)
    complete, pending = claimed
    if complete and scope is not None:  # a deny is counted where it is audited
        observe.approval_decided("approved")
    if scope is None:
        return Denied(pending)
    if not complete:
        counted = f"approved ({len(pending.approvals)} of {required(pending, approvals)})"
        await record_pending(state.audit, pending, approver, counted)
        return Counted(pending)
    granted = narrowest(pending.scopes, scope)
    if pending.origin:  # an outside client's change: once only
        granted = GrantScope.ONCE
    return Approved(pending, granted)


async def record_pending(
    audit: AuditLog, pending: PendingApproval, approver: str | None, outcome: str
) -> None:
    """Audit what became of a pending approval that did not run (counted, denied,
    superseded, expired)."""
    observe.approval_decided(outcome)
    await audit.record(
        session_id=pending.session_id,
        requester=pending.requester,
        approver=approver,
        database=pending.database,
        environment=pending.environment,
        risk=pending.risk,
        sql=pending.sql,
        outcome=outcome,
        origin=pending.origin or None,
    )
