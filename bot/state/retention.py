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

BATCH = 200  # rows per job: a few milliseconds, the most a store call waits behind it
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
        deadline = time.monotonic() + self.budget_s
        kinds = list(self._kinds().items())
        # Round robin, so one kind's backlog never starves the others' pruning; at least
        # one round, so every pass makes progress.
        first_round = True
        while kinds and (first_round or time.monotonic() < deadline):
            first_round = False
            for kind, prune in list(kinds):
                count = await prune(self.batch)
                if count:
                    removed[kind] = removed.get(kind, 0) + count
                if count < self.batch:
                    kinds.remove((kind, prune))
                await asyncio.sleep(0)  # let the loop serve between batches
        return removed, bool(kinds)

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
