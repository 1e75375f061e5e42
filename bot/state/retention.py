"""Retention: old records are forgotten a small batch at a time, never in one long step.

Each batch is one short job of the store (an indexed range delete), so a store call that
arrives meanwhile waits for one batch at most, not for the whole pass; a pass removes at
most `max_batches` batches per kind and the next one comes soon when work is left, so a
large backlog drains over several passes while the bot serves. On Redis most records
expire by themselves and a pass has little to do.
"""

from __future__ import annotations

import asyncio
import functools
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

BATCH = 500
MAX_BATCHES = 4
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
    }


class Pruner:
    def __init__(
        self,
        state: State,
        lifetimes: Lifetimes,
        clock: Callable[[], float] = time.time,
        *,
        batch: int = BATCH,
        max_batches: int = MAX_BATCHES,
    ) -> None:
        self._state = state
        self._lifetimes = lifetimes
        self._clock = clock
        self.batch = batch
        self.max_batches = max_batches

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
        left = False
        for kind, prune in self._kinds().items():
            total = 0
            for _ in range(self.max_batches):
                count = await prune(self.batch)
                total += count
                if count < self.batch:
                    break
                await asyncio.sleep(0)  # let the loop serve between batches
            else:
                left = True
            if total:
                removed[kind] = total
        return removed, left

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
