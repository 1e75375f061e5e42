"""Who may decide on an approval: configured user IDs, or members of configured user groups.

Group membership comes from `usergroups.users.list`, checked at the click and cached for a
minute at most, so a burst of clicks costs one call and someone removed from the group
loses the right within that minute. When Slack cannot be asked, the answer is no (fail
closed, `MembershipUnknown`): an old membership list is not trusted.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

log = logging.getLogger(__name__)

GROUP_TTL_S = 60.0


class MembershipUnknown(Exception):
    """Slack could not say whether the person is in an approver group."""


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
        """True for a configured user or a group member; False for anyone else; raises
        MembershipUnknown when a group Slack could not list might hold them."""
        if user in self.users:
            return True
        unknown = False
        for group in self.groups:
            members = await self._group_members(group)
            if members is None:
                unknown = True
            elif user in members:
                return True
        if unknown:
            raise MembershipUnknown(user)
        return False

    async def is_approver(self, user: str) -> bool:
        """As `allows`, with "Slack cannot say" as no: for what shows or permits less to
        a non-approver and needs no reason of its own (the Home tab, Stop)."""
        try:
            return await self.allows(user)
        except MembershipUnknown:
            return False

    async def everyone(self) -> list[str]:
        """Every approver by user ID (groups expanded, as far as Slack can say), sorted."""
        people = set(self.users)
        for group in self.groups:
            members = await self._group_members(group)
            people.update(members or ())
        return sorted(people)

    async def _group_members(self, group: str) -> frozenset[str] | None:
        cached = self._members.get(group)
        if cached is not None and self._clock() - cached[0] < self._ttl_s:
            return cached[1]
        try:
            response = await self._client.usergroups_users_list(usergroup=group)
            members = frozenset(response.get("users") or ())
        except (SlackApiError, SlackClientError, OSError, TimeoutError) as exc:
            log.warning("cannot list members of user group %s: %s", group, exc)
            self._members.pop(group, None)
            return None
        self._members[group] = (self._clock(), members)
        return members
