"""Who may decide on an approval: configured user IDs, or members of configured user groups.

Group membership comes from `usergroups.users.list`, cached for a few minutes so a burst of
clicks costs one call. When Slack cannot be asked, the last known membership is used; with
none, the answer is no (fail closed).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

log = logging.getLogger(__name__)

GROUP_TTL_S = 300.0


class Approvers:
    def __init__(
        self,
        client: AsyncWebClient,
        approvers: Sequence[str],
        *,
        ttl_s: float = GROUP_TTL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client = client
        self.users = frozenset(a for a in approvers if not a.startswith("S"))
        self.groups = tuple(a for a in approvers if a.startswith("S"))
        self._ttl_s = ttl_s
        self._clock = clock
        self._members: dict[str, tuple[float, frozenset[str]]] = {}

    @property
    def configured(self) -> bool:
        return bool(self.users or self.groups)

    async def allows(self, user: str) -> bool:
        if user in self.users:
            return True
        for group in self.groups:
            if user in await self._group_members(group):
                return True
        return False

    async def _group_members(self, group: str) -> frozenset[str]:
        cached = self._members.get(group)
        if cached is not None and self._clock() - cached[0] < self._ttl_s:
            return cached[1]
        try:
            response = await self._client.usergroups_users_list(usergroup=group)
            members = frozenset(response.get("users") or ())
        except (SlackApiError, SlackClientError, OSError) as exc:
            log.warning("cannot list members of user group %s: %s", group, exc)
            return cached[1] if cached is not None else frozenset()
        self._members[group] = (self._clock(), members)
        return members
