"""Retention: old records are forgotten a small batch at a time, never in one long step.

Each batch is one short job of the store (an indexed range delete), so a store call that
arrives meanwhile waits for one batch at most, not for the whole pass; a pass stops after
`budget_s` of work and the next one comes soon when work is left, so a large backlog
drains over several passes while the bot serves. On Redis most records
expire by themselves and a pass has little to do.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from bot.config import Limits, Retention
from bot.state.codec import days_to_seconds
from bot.state.errors import StateError

if TYPE_CHECKING:
    from bot.state.facade import State

log = logging.getLogger(__name__)

BATCH = 500  # rows per job at most; fewer when the machine is slow (TARGET_BATCH_S)
MIN_BATCH = 10
FIRST_BATCH = 32  # then grown while batches stay short
TARGET_BATCH_S = 0.004  # a job's length is what a store call may wait behind it
BUDGET_S = 0.05  # of work per pass; what is left waits for the next pass, a second later
EVERY_S = 300.0  # between passes when the last one finished its work
SOON_S = 1.0  # between passes while a backlog is left

Prune = Callable[[int], Awaitable[int]]
Lifetimes = dict[str, float | None]  # seconds a kind of record is kept; None: forever


def lifetimes(retention: Retention, limits: Limits) -> Lifetimes:
    """How long each kind is kept, from `[retention]`. A pending approval outlives its own
    expiry, so a late click is told it expired rather than that it is unknown."""
    short = days_to_seconds(retention.proposals_days)
    return {
        "sessions": days_to_seconds(retention.sessions_days),
        "seen_events": days_to_seconds(retention.seen_events_days),
        "proposals": short,
        "questions": short,
        "pending": None if short is None else max(short, 2.0 * limits.approval_ttl_s),
        "audit": days_to_seconds(retention.audit_days),
        "executions": days_to_seconds(retention.audit_days),  # the audit's write-ahead side
        "undo": short,  # what an Undo button puts back lives as long as the button
        "posted": short,  # the messages whose buttons show those records
        "requests": short,  # MCP clients' changes, for get_proposal
    }


class Pruner:
    def __init__(
        self,
        state: State,
        lifetimes: Lifetimes,
        clock: Callable[[], float] = time.time,
        *,
        batch: int = BATCH,
        budget_s: float = BUDGET_S,
    ) -> None:
        self._state = state
        self._lifetimes = lifetimes
        self._clock = clock
        self.batch = batch
        self.budget_s = budget_s
        self._sizes: dict[str, int] = {}  # the last batch size per kind
        self._turns: dict[str, int] = {}  # when each kind last had a batch
        self._clockwork = itertools.count(1)

    def _kinds(self) -> dict[str, Prune]:
        """What to prune now, by kind: a function of the batch size."""
        state, now, kept = self._state, self._clock(), self._lifetimes
        kinds: dict[str, Prune] = {"grants": state.grants.prune}
        prunes: dict[str, Callable[[float, int], Awaitable[int]]] = {
            "sessions": state.sessions.prune,
            "seen_events": state.seen_events.prune,
            "proposals": state.proposals.prune,
            "questions": state.questions.prune,
            "pending": state.pending.prune,
            "executions": state.executions.prune,
            "undo": state.executions.prune_undo,
            "posted": state.posted.prune,
            "requests": state.requests.prune,
        }
        for kind, prune in prunes.items():
            seconds = kept[kind]
            if seconds is not None:
                kinds[kind] = functools.partial(prune, now - seconds)
        audit_s = kept["audit"]
        if audit_s is not None:
            kinds["audit"] = functools.partial(state.audit.prune, audit_s)
        return kinds

    async def prune_pass(self) -> tuple[dict[str, int], bool]:
        """One pass: what was removed per kind, and whether work is left for the next."""
        removed: dict[str, int] = {}
        deadline = time.monotonic() + self.budget_s
        prunes = self._kinds()
        # Round robin, across passes too, so one kind's backlog never starves the others;
        # at least one batch, so every pass makes progress.
        kinds = sorted(prunes, key=lambda kind: self._turns.get(kind, 0))
        done_one = False
        while kinds:
            for kind in list(kinds):
                if done_one and time.monotonic() >= deadline:
                    return removed, True
                size = self._sizes.get(kind, min(FIRST_BATCH, self.batch))
                started = time.perf_counter()
                count = await prunes[kind](size)
                self._sizes[kind] = self._next_size(size, time.perf_counter() - started)
                self._turns[kind] = next(self._clockwork)
                done_one = True
                if count:
                    removed[kind] = removed.get(kind, 0) + count
                if count < size:
                    kinds.remove(kind)
                await asyncio.sleep(0)  # let the loop serve between batches
        return removed, False

    def _next_size(self, size: int, took_s: float) -> int:
        """Batches sized to take about TARGET_BATCH_S on this machine, under its load."""
        if took_s > TARGET_BATCH_S:
            return max(MIN_BATCH, size // 2)
        if took_s < TARGET_BATCH_S / 2:
            return min(self.batch, size * 3 // 2 + 1)
        return size

    async def run_forever(self) -> None:
        while True:
            left = False
            try:
                removed, left = await self.prune_pass()
                if removed:
                    log.info("forgot old records: %s", removed)
            except StateError as exc:
                log.warning("pruning old records failed: %s", exc)
            except Exception:
                log.exception("pruning old records failed")
            await asyncio.sleep(SOON_S if left else EVERY_S)
