"""What the listeners share: settings, the agent, the Slack client and the small caches.

`build_app` puts one `Services` in every request's context (`context["dbagent"]`), the way
Bolt passes `client` and `logger`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from slack_sdk.web.async_client import AsyncWebClient

from bot.agent.outcomes import Question
from bot.changes.types import PendingApproval
from bot.config import Settings
from bot.slack.approvers import Approvers
from bot.slack.open_messages import OpenMessages
from bot.slack.proposals import Proposals
from bot.slack.sessions import Dedupe, KnownSessions, SessionQueues
from bot.slack.status_line import STATUS_GRACE_S
from bot.slack.turns import Capabilities, RunningTurns
from bot.slack.users import UserDirectory
from bot.state import State
from bot.state.live_messages import LiveMessages

if TYPE_CHECKING:
    from bot.agent import Agent

CONTEXT_KEY = "dbagent"


@dataclass
class Services:
    settings: Settings
    agent: Agent
    state: State
    client: AsyncWebClient
    approvers: Approvers
    users: UserDirectory
    dedupe: Dedupe
    known: KnownSessions
    proposals: Proposals
    open_cards: OpenMessages[PendingApproval]  # cards still showing buttons (in the store)
    open_questions: OpenMessages[Question]
    deciding_cards: OpenMessages[PendingApproval]  # clicked; the decision still runs
    live_messages: LiveMessages  # streams and working messages open while runs work
    queues: SessionQueues = field(default_factory=SessionQueues)
    status_grace_s: float = STATUS_GRACE_S
    store_wait_s: float = 600.0  # a message waits this long for an unreachable state store
    capabilities: Capabilities = field(default_factory=Capabilities)
    turns: RunningTurns = field(default_factory=RunningTurns)
    workspace: dict[str, str] = field(default_factory=dict)  # what auth.test said, cached
    # channel → (whether it is public, when asked: time.monotonic()), as conversations.info
    # said (bot.slack.privacy)
    public_channels: dict[str, tuple[bool, float]] = field(default_factory=dict)

    @classmethod
    def create(
        cls, settings: Settings, agent: Agent, state: State, client: AsyncWebClient
    ) -> Services:
        return cls(
            settings=settings,
            agent=agent,
            state=state,
            client=client,
            approvers=Approvers(client, settings.approvals.approvers),
            users=UserDirectory(
                client,
                groups=[
                    entry
                    for database in settings.databases
                    for entry in (*database.unmasked_for, *database.access)
                    if entry.startswith("S")
                ],
            ),
            dedupe=Dedupe(state.seen_events),
            known=KnownSessions(state.sessions),
            proposals=Proposals(
                state.proposals, settings.databases, max_sql_chars=settings.limits.max_sql_chars
            ),
            open_cards=OpenMessages(state.posted, "card", PendingApproval.from_json, state.clock),
            open_questions=OpenMessages(state.posted, "question", Question.from_json, state.clock),
            deciding_cards=OpenMessages(
                state.posted, "deciding", PendingApproval.from_json, state.clock
            ),
            live_messages=LiveMessages(state.posted, state.clock),
        )


def services_of(context: dict[str, Any]) -> Services:
    services: Services = context[CONTEXT_KEY]
    return services
