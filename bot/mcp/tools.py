"""The MCP tools: the agent's own, by the same names and parameters, run through the same
registry (classifier, guard, READ ONLY sessions, timeouts, confinement) as the person the
client acts for, plus `get_proposal`.

A change never runs inside the call: execute_query posts the usual approval card in
`[mcp] approval_channel` and answers at once with the proposal's id; the change runs once,
bounded, when the last approver clicks (the person behind the client cannot approve it),
whether or not the client asks again. Calling again proposes again; it never runs the
first proposal a second time.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import Field, ValidationError

from bot.agent import tools
from bot.agent.compaction import compact_text
from bot.agent.outcomes import Requester
from bot.agent.tools import ApprovalRequired, ToolReply
from bot.agent.tools.base import Parameters, dumps, schema_of
from bot.agent.turns import ToolCall
from bot.config import McpClient, Mode, Settings
from bot.mcp.clients import origin
from bot.observability import observe
from bot.state import State, StateError
from bot.state.requests import RequestStatus

if TYPE_CHECKING:
    from bot.agent import Agent
    from bot.mcp.slack import SlackApprovals

log = logging.getLogger(__name__)

# The agent's tools an MCP client gets (ask_user and get_skill are for the Slack thread).
AGENT_TOOLS = (
    "list_databases",
    "list_tables",
    "get_columns",
    "get_current_time",
    "get_sample_data",
    "explain_query",
    "execute_query",
)
GET_PROPOSAL = "get_proposal"
READ_ONLY_TOOLS = frozenset(AGENT_TOOLS) - {"execute_query"}

NOT_POSTED = (
    "Error: the approval card could not be posted in Slack, so nobody can approve this "
    "change; nothing was run. Try again later."
)
PENDING_MESSAGE = (
    "Not run yet: the change waits for approval on the card in Slack. {required} approver(s) "
    "other than the person this client acts for must approve it; then it runs once, bounded "
    "by the rows the card states. Ask get_proposal for its status."
)


class ProposalParameters(Parameters):
    proposal_id: str = Field(
        min_length=1,
        max_length=64,
        description="The proposal_id execute_query returned for a change.",
    )


GET_PROPOSAL_DESCRIPTION = (
    "The status of a change execute_query proposed: pending | approved | denied | expired | "
    "executed | failed, who approved it, and once it ran its outcome (rows changed, whether "
    "an exact Undo is available on the card)."
)


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool


@dataclass(frozen=True, slots=True)
class Reply:
    text: str  # JSON, or a sentence starting "Error:" / "Blocked:"
    is_error: bool = False


def _error(message: str) -> Reply:
    return Reply(
        message if message.startswith(("Error:", "Blocked:")) else f"Error: {message}", True
    )


def specs() -> list[ToolSpec]:
    """The tools as an MCP client lists them: the agent's own schemas, and get_proposal."""
    listed = []
    for name in AGENT_TOOLS:
        function = tools.TOOLS[name].spec()["function"]
        listed.append(
            ToolSpec(name, function["description"], function["parameters"], name in READ_ONLY_TOOLS)
        )
    schema = schema_of(ProposalParameters)
    listed.append(ToolSpec(GET_PROPOSAL, GET_PROPOSAL_DESCRIPTION, schema, read_only=True))
    return listed


class McpTools:
    """Tool calls of authenticated MCP clients, whatever the transport."""

    def __init__(self, agent: Agent, settings: Settings, state: State, slack: SlackApprovals):
        self.agent = agent
        self.settings = settings
        self.state = state
        self.slack = slack

    @observe.mcp_call
    async def call(self, client: McpClient, name: str, arguments: dict[str, Any] | None) -> Reply:
        if name == GET_PROPOSAL:
            try:
                parameters = ProposalParameters.model_validate(arguments or {})
            except ValidationError:
                return _error("invalid arguments: give proposal_id, as execute_query returned it")
            return await self.proposal(client, parameters.proposal_id)
        if name not in AGENT_TOOLS:
            return _error(f"unknown tool {name!r}; the tools are: {', '.join(AGENT_TOOLS)}")
        call = ToolCall(uuid.uuid4().hex, name, json.dumps(arguments or {}))
        prepared = tools.prepare(call, Mode.AGENT)
        if isinstance(prepared, ToolReply):
            return _error(prepared.content)
        requester = await self.slack.requester(client.user)
        context = self.agent.tool_context(f"mcp:{client.name}", requester, origin=origin(client))
        outcome = await tools.run(prepared, context)
        if isinstance(outcome, ApprovalRequired):
            return await self._propose(client, requester, outcome)
        if not isinstance(outcome, ToolReply):  # ask_user is not offered: fail closed
            return _error("this tool needs a person in Slack and was not run")
        text = compact_text(outcome.content, self.settings.limits.tool_result_chars)
        return Reply(text, outcome.content.startswith(("Error:", "Blocked:")))

    async def _propose(
        self, client: McpClient, requester: Requester, change: ApprovalRequired
    ) -> Reply:
        """The change as a card in the approval channel, answered at once."""
        thread = await self.slack.open_thread(client, change)
        if thread is None:
            return _error(NOT_POSTED)
        pending = await self.agent.propose(
            thread.session_id, change, requester, origin=origin(client)
        )
        await self.state.requests.add(
            {
                "id": pending.id,
                "created_at": pending.created_at,
                "status": RequestStatus.PENDING.value,
                "client": client.name,
                "user": client.user,
                "database": pending.database,
                "environment": pending.environment,
                "risk": pending.risk,
                "sql": pending.sql,
                "required": pending.required,
                "card": "",
            }
        )
        link = await self.slack.post_card(thread, pending)
        if link is None:  # withdrawn by cards.post_card: nobody can approve what nobody saw
            return _error(NOT_POSTED)
        try:
            await self.state.requests.note(pending.id, card=link)
        except StateError as exc:
            log.error("card link of MCP change %s not kept: %s", pending.id, exc)
        return Reply(
            dumps(
                {
                    "status": "pending_approval",
                    "proposal_id": pending.id,
                    "card": link,
                    "database": pending.database,
                    "required_approvals": pending.required,
                    "message": PENDING_MESSAGE.format(required=pending.required),
                }
            )
        )

    async def proposal(self, client: McpClient, proposal_id: str) -> Reply:
        """get_proposal: what became of a change this client's person asked for."""
        record = await self.state.requests.get(proposal_id)
        if record is None or record.get("user") != client.user:
            return _error(f"no proposal {proposal_id!r} of yours is known (it may be too old)")
        status = RequestStatus(record["status"])
        approvals = list(record.get("approvers") or ())
        if status is RequestStatus.PENDING:
            pending = await self.agent.pending(proposal_id)
            age = time.time() - float(record["created_at"])
            if age > self.settings.limits.approval_ttl_s:
                status = RequestStatus.EXPIRED
            elif pending is None:  # the last approval took it a moment ago: it runs now
                status = RequestStatus.APPROVED
            else:
                approvals = list(pending.approvals)
        answer: dict[str, Any] = {
            "proposal_id": proposal_id,
            "status": status.value,
            "database": record["database"],
            "environment": record["environment"],
            "sql": record["sql"],
            "card": record.get("card") or None,
            "requested_by": record["user"],
            "client": record["client"],
            "required_approvals": record.get("required", 1),
            "approvals": approvals,
        }
        if "summary" in record:
            answer["outcome"] = record["summary"]
        if status in (RequestStatus.EXECUTED, RequestStatus.FAILED) and "result" in record:
            answer["result"] = _parsed(str(record.get("result") or ""))
            answer["undo_available"] = bool(record.get("undo_available"))
            if record.get("undo_reason"):
                answer["no_undo_because"] = record["undo_reason"]
        if "decided_by" in record:
            answer["decided_by"] = record["decided_by"]
        return Reply(dumps(answer))


def _parsed(content: str) -> Any:
    """The tool's JSON reply as JSON; its sentence as it is."""
    try:
        return json.loads(content)
    except ValueError:
        return content
