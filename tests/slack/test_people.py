"""Approvers (users and user groups, cached) and requesters' time zones (users.info, cached)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.approvers import Approvers, MembershipUnknown
from bot.slack.users import UserDirectory
from tests.fakes.slack_server import FakeSlack


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(users={"U1": "Europe/Paris"}, usergroups={"S1": ["U2", "U3"]}) as server:
        yield server


@pytest.fixture
def client(slack: FakeSlack) -> AsyncWebClient:
    return AsyncWebClient(token="xoxb-test", base_url=slack.api_url)


async def test_configured_users_may_approve(client: AsyncWebClient) -> None:
    approvers = Approvers(client, ["U1", "S1"])
    assert await approvers.allows("U1")


async def test_members_of_configured_groups_may_approve(
    client: AsyncWebClient, slack: FakeSlack
) -> None:
    approvers = Approvers(client, ["U1", "S1"])
    assert await approvers.allows("U2")
    assert await approvers.allows("U3")
    assert not await approvers.allows("U9")
    assert len(slack.calls_to("usergroups.users.list")) == 1  # cached


async def test_group_membership_is_asked_again_after_the_ttl(
    client: AsyncWebClient, slack: FakeSlack
) -> None:
    now = [0.0]
    approvers = Approvers(client, ["S1"], ttl_s=60, clock=lambda: now[0])
    assert await approvers.allows("U2")
    slack.usergroups["S1"] = ["U3"]
    assert await approvers.allows("U2")  # still cached
    now[0] = 61
    assert not await approvers.allows("U2")
    assert len(slack.calls_to("usergroups.users.list")) == 2


async def test_when_slack_cannot_answer_membership_is_unknown(
    client: AsyncWebClient, slack: FakeSlack
) -> None:
    slack.fail_next("usergroups.users.list", "missing_scope")
    with pytest.raises(MembershipUnknown):
        await Approvers(client, ["S1"]).allows("U2")


async def test_a_failed_refresh_does_not_trust_the_old_members(
    client: AsyncWebClient, slack: FakeSlack
) -> None:
    now = [0.0]
    approvers = Approvers(client, ["S1"], ttl_s=60, clock=lambda: now[0])
    assert await approvers.allows("U2")
    now[0] = 120
    slack.fail_next("usergroups.users.list", "ratelimited")
    with pytest.raises(MembershipUnknown):
        await approvers.allows("U2")


async def test_membership_is_cached_for_a_minute_at_most(
    client: AsyncWebClient, slack: FakeSlack
) -> None:
    now = [0.0]
    approvers = Approvers(client, ["S1"], clock=lambda: now[0])
    assert await approvers.allows("U2")
    slack.usergroups["S1"] = ["U3"]  # removed from the group
    now[0] = 60.5
    assert not await approvers.allows("U2")


async def test_a_configured_user_needs_no_group_lookup(
    client: AsyncWebClient, slack: FakeSlack
) -> None:
    slack.fail_next("usergroups.users.list", "missing_scope")
    assert await Approvers(client, ["U1", "S1"]).allows("U1")


async def test_with_no_approvers_nobody_may_approve(client: AsyncWebClient) -> None:
    approvers = Approvers(client, [])
    assert not approvers.configured
    assert not await approvers.allows("U1")


async def test_the_requester_gets_their_time_zone_once(
    client: AsyncWebClient, slack: FakeSlack
) -> None:
    users = UserDirectory(client)
    first = await users.requester("U1")
    assert (first.user_id, first.timezone, first.name) == ("U1", "Europe/Paris", "u1")
    assert await users.requester("U1") == first
    assert len(slack.calls_to("users.info")) == 1


async def test_an_unknown_user_is_served_in_utc(client: AsyncWebClient) -> None:
    requester = await UserDirectory(client).requester("U404")
    assert (requester.user_id, requester.timezone) == ("U404", "UTC")


async def test_is_approver_says_no_when_slack_cannot_answer(
    client: AsyncWebClient, slack: FakeSlack
) -> None:
    slack.fail_next("usergroups.users.list", "missing_scope")
    assert not await Approvers(client, ["S1"]).is_approver("U2")
