"""Stop requests between the processes that serve one Slack app.

A Stop click reaches whichever replica Slack or the load balancer picks, and the run it
stops may be going on in another. On Redis the click is published to every serving
process; the one running that thread's turn stops it, the others ignore it. The embedded
store serves one process, so there is nobody to forward a click to.

Requests are opaque JSON objects to this module (the adapter knows what a click holds).
Pub/sub keeps nothing: a request nobody hears is lost, which is right for a Stop, since a
process that starts later runs nothing the click was about.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from typing import Any

from redis.exceptions import RedisError

from bot.state.errors import StateError
from bot.state.redis_db import RedisDb
from bot.state.seal import UNSEALED, Seal

log = logging.getLogger(__name__)

_RESUBSCRIBE_S = 1.0  # after Redis failed: try again this often, without flooding the log
_POLL_S = 1.0
# A forwarded Stop older than this is not acted on (one seen on the channel and sent again).
FRESH_S = 60.0
_SENT_AT = "forwarded_at"


class StopRequests(ABC):
    @abstractmethod
    async def forward(self, request: dict[str, Any]) -> bool:
        """Hand `request` to every serving process; True when at least one heard it."""

    @abstractmethod
    def incoming(self) -> AsyncIterator[dict[str, Any]]:
        """Requests forwarded by any process (this one too), for as long as it serves."""


class LocalStopRequests(StopRequests):
    async def forward(self, request: dict[str, Any]) -> bool:
        return False  # one process: the click reached the only one there is

    async def incoming(self) -> AsyncIterator[dict[str, Any]]:
        await asyncio.Event().wait()  # nothing ever arrives
        yield {}  # pragma: no cover - unreachable; makes this an async generator


class RedisStopRequests(StopRequests):
    """Requests are sealed (bot.state.seal) with the time they were sent: one not forwarded
    by a serving process, or altered (another clicker's id), or older than FRESH_S, is
    dropped with a log line."""

    def __init__(self, db: RedisDb, seal: Seal = UNSEALED) -> None:
        self._db = db
        self._channel = db.key("stops")
        self._seal = seal

    async def forward(self, request: dict[str, Any]) -> bool:
        data = json.dumps(self._seal.sign("stop", {**request, _SENT_AT: time.time()}))
        heard = await self._db.run(lambda c: c.publish(self._channel, data))
        return bool(heard)

    async def incoming(self) -> AsyncIterator[dict[str, Any]]:
        while True:
            pubsub = self._db.client.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(self._channel)
                while True:
                    message = await pubsub.get_message(timeout=_POLL_S)
                    request = self._checked(_request_of(message))
                    if request is not None:
                        yield request
            except (RedisError, OSError, StateError) as exc:
                log.warning("stop requests from other processes not heard: %s", exc)
                await asyncio.sleep(_RESUBSCRIBE_S)
            finally:
                await pubsub.aclose()  # type: ignore[no-untyped-call]

    def _checked(self, request: dict[str, Any] | None) -> dict[str, Any] | None:
        if request is None:
            return None
        opened = self._seal.opened("stop", request, "stops")
        if opened is None:
            return None
        sent_at = opened.pop(_SENT_AT, None)
        if not isinstance(sent_at, int | float) or abs(time.time() - sent_at) > FRESH_S:
            log.warning("a forwarded stop request that is not fresh was ignored")
            return None
        return opened


def _request_of(message: dict[str, Any] | None) -> dict[str, Any] | None:
    if message is None or message.get("type") != "message":
        return None
    try:
        request = json.loads(message["data"])
    except (TypeError, ValueError):
        log.warning("a malformed stop request was ignored")
        return None
    return request if isinstance(request, dict) else None
