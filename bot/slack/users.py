"""People behind Slack user IDs: display name and time zone (`users.info`), cached.

The time zone feeds `get_current_time`, so "yesterday" means the asker's yesterday. When
Slack cannot be asked, the person is still served, in UTC.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.agent.outcomes import Requester

log = logging.getLogger(__name__)

USER_TTL_S = 3600.0
FAILURE_TTL_S = 60.0  # retry a failed lookup after a minute, not on every message


class UserDirectory:
    def __init__(
        self,
        client: AsyncWebClient,
        *,
        ttl_s: float = USER_TTL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client = client
        self._ttl_s = ttl_s
        self._clock = clock
        self._cache: dict[str, tuple[float, Requester]] = {}

    async def requester(self, user: str) -> Requester:
        cached = self._cache.get(user)
        if cached is not None and self._clock() < cached[0]:
            return cached[1]
        try:
            response = await self._client.users_info(user=user)
        except (SlackApiError, SlackClientError, OSError) as exc:
            log.warning("users.info failed for %s: %s; using UTC", user, exc)
            fallback = cached[1] if cached is not None else Requester(user_id=user)
            self._cache[user] = (self._clock() + FAILURE_TTL_S, fallback)
            return fallback
        profile = response.get("user") or {}
        details = profile.get("profile") or {}
        name = details.get("display_name") or profile.get("real_name") or profile.get("name")
        found = Requester(user_id=user, name=name or "", timezone=profile.get("tz") or "UTC")
        self._cache[user] = (self._clock() + self._ttl_s, found)
        return found
