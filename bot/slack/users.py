"""People behind Slack user IDs: display name and time zone (`users.info`), cached.

The time zone feeds `get_current_time`, so "yesterday" means the asker's yesterday. When
Slack cannot be asked, the person is still served, in UTC.

The user groups the configuration names (`unmasked_for`, `[databases.access]`) are listed
too, and the person's own among them go with the Requester (checked at most a minute old; a
group Slack cannot list counts as not holding them: masked values stay masked, a role given
by that group is not given).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import replace

from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.agent.outcomes import Requester

log = logging.getLogger(__name__)

USER_TTL_S = 3600.0
FAILURE_TTL_S = 60.0
GROUP_TTL_S = 60.0  # retry a failed lookup after a minute, not on every message


class UserDirectory:
    def __init__(
        self,
        client: AsyncWebClient,
        *,
        ttl_s: float = USER_TTL_S,
        clock: Callable[[], float] = time.monotonic,
        groups: Sequence[str] = (),
    ) -> None:
        self._client = client
        self._groups = tuple(dict.fromkeys(groups))
        self._members: dict[str, tuple[float, frozenset[str]]] = {}
        self._ttl_s = ttl_s
        self._clock = clock
        self._cache: dict[str, tuple[float, Requester]] = {}

    async def requester(self, user: str) -> Requester:
        found = await self._profile(user)
        if not self._groups:
            return found
        groups = [group for group in self._groups if user in await self._group_members(group)]
        return replace(found, groups=tuple(groups))

    async def _group_members(self, group: str) -> frozenset[str]:
        cached = self._members.get(group)
        if cached is not None and self._clock() < cached[0]:
            return cached[1]
        try:
            response = await self._client.usergroups_users_list(usergroup=group)
            members = frozenset(response.get("users") or ())
        except (SlackApiError, SlackClientError, OSError) as exc:
            log.warning("cannot list members of user group %s: %s", group, exc)
            return frozenset()
        self._members[group] = (self._clock() + GROUP_TTL_S, members)
        return members

    async def _profile(self, user: str) -> Requester:
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
