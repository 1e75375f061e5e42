"""One run of a session: system prompt → model → tool calls → results → … → an answer.

A run ends in an Answer, a Failed, or an AwaitingApproval when a statement needs an
approver: then everything needed to go on is in the store (the assistant message with its
tool calls, the results of the calls already done, the pending record), and `carry_out` picks
the run up again — in this process or in the next one.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.agent import tools
from bot.agent.compaction import compact_text, estimate_tokens, fit_history
from bot.agent.model import ModelClient, ModelError
from bot.agent.outcomes import (
    Answer,
    AwaitingApproval,
    AwaitingReply,
    Failed,
    Option,
    Outcome,
    Progress,
    QueryResult,
    Question,
    Requester,
    Step,
)
from bot.agent.prompt import build_system_prompt, earlier_note
from bot.agent.sessions import Session, Sessions, SessionStatus
from bot.agent.skills import Skills
from bot.agent.tools import (
    ApprovalRequired,
    PreparedCall,
    QuestionRequired,
    ToolContext,
    ToolOutcome,
    ToolReply,
)
from bot.agent.tools.base import dumps
from bot.agent.turns import JsonObject, ModelTurn, ToolCall, bound_arguments, refused_arguments
from bot.changes.decide import record_pending
from bot.changes.grants import mint_grant
from bot.changes.types import ApprovalDecision, PendingApproval
from bot.config import Environment, Mode, Settings
from bot.state import State, StateError
from bot.state.audit import AuditLog
from bot.state.grants import Grants, GrantScope

if TYPE_CHECKING:
    from bot.db import DatabaseRegistry

log = logging.getLogger(__name__)

Wait = PendingApproval | Question  # what a paused run waits for
OnDecided = Callable[[ApprovalDecision], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Parts:
    """What every run shares."""

    settings: Settings
    state: State
    sessions: Sessions
    databases: DatabaseRegistry
    model: ModelClient
    skills: Skills
    grants: Grants
    audit: AuditLog

    def context(
        self,
        session_id: str,
        requester: Requester,
        mode: Mode,
        approver: str | None,
        origin: str = "",
        call_id: str = "",
    ) -> ToolContext:
        """What a tool may use, for one session and the person it acts for."""
        return ToolContext(
            session_id=session_id,
            requester=requester,
            mode=mode,
            settings=self.settings,
            databases=self.databases,
            skills=self.skills,
            grants=self.grants,
            audit=self.audit,
            approver=approver,
            executions=self.state.executions,
            origin=origin,
            call_id=call_id,
        )


def open_calls(messages: list[JsonObject]) -> list[ToolCall]:
    """Tool calls of the last assistant message that have no result yet, in call order."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.get("role") == "assistant":
            answered = {m.get("tool_call_id") for m in messages[index + 1 :]}
            calls = [ToolCall.from_message(c) for c in message.get("tool_calls") or []]
            return [call for call in calls if call.id not in answered]
        if message.get("role") == "user":
            return []
    return []


def last_user_text(messages: list[JsonObject]) -> str:
    """The person's message that started the current run."""
    for message in reversed(messages):
        if message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else ""
    return ""


def tool_message(call_id: str, content: str) -> JsonObject:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


class Runner:
    """Drives one session's run; the caller holds the session's lock."""

    def __init__(self, parts: Parts, session: Session, progress: Progress | None) -> None:
        self.parts = parts
        self.session = session
        self.progress = progress
        # Shown with this outcome only: an answer after an approval does not repeat the
        # tables already shown with the approval request.
        self.results: list[QueryResult] = []
        self.said: list[str] = []

    # -- plumbing -----------------------------------------------------------------------
    @property
    def requester(self) -> Requester:
        return self.session.requester or Requester(user_id="unknown")

    def context(self, approver: str | None = None, call_id: str = "") -> ToolContext:
        return self.parts.context(
            self.session.id, self.requester, self.session.mode, approver, call_id=call_id
        )

    async def save(self) -> None:
        await self.parts.sessions.save(self.session)

    async def report(self, step: Step) -> None:
        if not step.title or self.progress is None:
            return
        try:
            await self.progress(step)
        except Exception:  # a progress step is never worth a failed run
            log.warning("progress callback failed", exc_info=True)

    async def fail(self, message: str) -> Failed:
        self.session.status = SessionStatus.FAILED
        self.session.last_error = message
        self.session.iterations = 0
        await self.save()
        # The rows already fetched are still the person's, with the SQL that made them.
        return Failed(message, results=tuple(self.results))

    async def guarded(self, step: Callable[[], Awaitable[Outcome]]) -> Outcome:
        """Run `step`; what goes wrong ends as Failed with a sentence, never a traceback."""
        try:
            return await step()
        except ModelError as exc:
            return await self.fail(str(exc))
        except StateError as exc:  # saving would fail too: say so, and stop here
            log.error("run of session %s stopped: %s", self.session.id, exc)
            return Failed(f"I could not save this conversation, so I stopped: {exc}")
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("run of session %s failed", self.session.id)
            return await self.fail("something went wrong inside dbagent; see its log")

    # -- the loop -----------------------------------------------------------------------
    async def loop(self) -> Outcome:
        session, limit = self.session, self.parts.settings.limits.max_iterations
        while True:
            if session.iterations >= limit:
                return await self.fail(
                    f"stopped after {session.iterations} model steps without a final answer "
                    f"(the limit is {limit}); ask again, more narrowly"
                )
            turn = await self.ask_model()
            if turn.is_empty:
                return await self.fail("the model sent an empty response (no text, no tool call)")
            turn = bound_arguments(turn, self.parts.settings.limits.max_sql_chars)
            session.messages.append(turn.assistant_message())
            if not turn.tool_calls:
                session.status = SessionStatus.IDLE
                session.last_error = None
                session.iterations = 0
                await self.save()
                return Answer(text=turn.text, results=tuple(self.results))
            # Saved once the step's calls have run (run_open_calls), not before.
            if turn.text.strip():
                self.said.append(turn.text.strip())
            waiting = await self.run_open_calls()
            if waiting is not None:
                return self.awaiting(waiting)

    async def ask_model(self) -> ModelTurn:
        """One model call: the system prompt, the mode's tools, the history fitted to budget."""
        parts, session = self.parts, self.session
        system = build_system_prompt(
            databases=[parts.databases.get(name).config for name in parts.databases.names()],
            mode=session.mode,
            requester=self.requester,
            skills=parts.skills,
        )
        budget = parts.settings.limits.history_token_budget
        budget -= estimate_tokens(system) + _specs_tokens(session.mode)
        for _ in range(3):  # dropping an exchange lengthens the note by its line
            lines = list(session.earlier)
            room = budget - estimate_tokens(earlier_note(session.earlier))
            fit_history(
                session.messages,
                room,
                estimates=session.token_estimates,
                earlier=session.earlier,
            )
            if session.earlier == lines:
                break
        turn = await parts.model.complete(
            [{"role": "system", "content": system}, *_with_earlier(session)],
            tools.specs_for(session.mode),
        )
        session.iterations += 1
        session.tokens_used += turn.usage.total_tokens
        return turn

    def awaiting(self, wait: Wait) -> AwaitingApproval | AwaitingReply:
        said, results = "\n\n".join(self.said), tuple(self.results)
        if isinstance(wait, Question):
            return AwaitingReply(wait, text=said, results=results)
        return AwaitingApproval(wait, text=said, results=results)

    # -- tool calls ---------------------------------------------------------------------
    async def run_open_calls(self) -> Wait | None:
        """Run the last assistant message's unanswered calls in order: neighbouring reads
        together, each execute_query alone. Stops at the first call that needs approval or
        asks the person a question. The session is saved once, when they have run (and
        before a call that may change data, so that a restart knows it was outstanding)."""
        raw = open_calls(self.session.messages)
        calls = [self.prepare(call) for call in raw]
        index = 0
        while index < len(calls):
            batch_end = index
            while batch_end < len(calls) and _concurrent(calls[batch_end]):
                batch_end += 1
            if batch_end > index:
                batch = list(range(index, batch_end))
                outcomes = await asyncio.gather(*(self.execute(calls[i]) for i in batch))
                for i, outcome in zip(batch, outcomes, strict=True):
                    self.append_result(raw[i], outcome)
                index = batch_end
            else:
                if _may_write(calls[index]):
                    await self.save()
                outcome = await self.execute(calls[index])
                if isinstance(outcome, ApprovalRequired):
                    return await self.pause(raw[index], outcome)
                if isinstance(outcome, QuestionRequired):
                    return await self.ask_person(raw[index], outcome)
                self.append_result(raw[index], outcome)
                index += 1
        await self.save()
        return None

    def prepare(self, call: ToolCall) -> PreparedCall | ToolReply:
        refusal = refused_arguments(call)
        if refusal is not None:
            return ToolReply(refusal, summary=refusal)
        return tools.prepare(call, self.session.mode)

    async def execute(
        self, prepared: PreparedCall | ToolReply, approver: str | None = None
    ) -> ToolOutcome:
        if isinstance(prepared, ToolReply):
            return prepared
        call_id, title = prepared.call.id, prepared.progress.rstrip("…").rstrip()
        await self.report(Step(call_id, title, "in_progress"))
        outcome = await tools.run(prepared, self.context(approver, call_id=call_id))
        if isinstance(outcome, ApprovalRequired):
            details = f"{outcome.risk} on {outcome.database}"
            await self.report(Step(call_id, "Waiting for approval", "in_progress", details))
        elif isinstance(outcome, ToolReply):
            failed = outcome.content.startswith(("Error:", "Blocked:"))
            details = outcome.summary or (outcome.content[:200] if failed else "")
            await self.report(Step(call_id, title, "error" if failed else "complete", details))
        return outcome

    def append_result(self, call: ToolCall, outcome: ToolOutcome) -> None:
        if isinstance(outcome, ApprovalRequired | QuestionRequired):  # never in a batch
            outcome = ToolReply("Error: this call needs the person and was not run")
        limit = self.parts.settings.limits.tool_result_chars
        self.session.messages.append(tool_message(call.id, compact_text(outcome.content, limit)))
        if outcome.result is not None:
            self.results.append(outcome.result)

    async def pause(self, call: ToolCall, approval: ApprovalRequired) -> PendingApproval:
        pending = PendingApproval(
            id=uuid.uuid4().hex,
            session_id=self.session.id,
            tool_call_id=call.id,
            database=approval.database,
            environment=approval.environment,
            risk=approval.risk,
            sql=approval.sql,
            requester=self.requester.user_id,
            created_at=time.time(),
            reason=approval.reason,
            impact=approval.impact,
            role=approval.role,
            request_text=last_user_text(self.session.messages),
            required=self.parts.settings.approvals.required_for(Environment(approval.environment)),
        )
        # The pending record first: a crash between the two writes leaves a record whose
        # session does not point at it, which a click reports as already decided.
        await self.parts.state.pending.add(pending.to_json())
        self.session.status = SessionStatus.AWAITING_APPROVAL
        self.session.pending_id = pending.id
        await self.save()
        return pending

    async def ask_person(self, call: ToolCall, asked: QuestionRequired) -> Question:
        question = Question(
            id=uuid.uuid4().hex,
            session_id=self.session.id,
            tool_call_id=call.id,
            kind=asked.kind,
            text=asked.text,
            options=tuple(Option(label, value) for label, value in asked.options),
            requester=self.requester.user_id,
            created_at=time.time(),
        )
        await self.parts.state.questions.add(question.to_json())
        self.session.status = SessionStatus.AWAITING_REPLY
        self.session.question_id = question.id
        await self.save()
        return question

    async def answered(
        self, question: Question, call: ToolCall, answer: str, value: str
    ) -> Outcome:
        """Resume the run with the person's answer as the ask_user result."""
        self.session.status = SessionStatus.RUNNING
        self.session.question_id = None
        reply = {"kind": question.kind, "answer": answer, "value": value}
        self.append_result(call, ToolReply(dumps(reply)))
        await self.save()
        return await self.carry_on()

    async def carry_on(self) -> Outcome:
        """The rest of the paused turn's calls, then the loop."""
        waiting = await self.run_open_calls()
        if waiting is not None:
            return self.awaiting(waiting)
        return await self.loop()

    # -- approval -----------------------------------------------------------------------
    async def carry_out(
        self,
        pending: PendingApproval,
        call: ToolCall,
        *,
        approver: str,
        scope: GrantScope | None,
        on_decided: OnDecided | None,
    ) -> Outcome:
        """Run (or deny) the paused call, tell `on_decided`, then carry on with the run."""
        session = self.session
        session.status = SessionStatus.RUNNING
        session.pending_id = None
        await self.save()
        again: PendingApproval | None = None
        undo: tuple[str | None, str] = (None, "")
        if scope is not None:
            await mint_grant(self.parts.grants, self.parts.settings, pending, scope, approver)
            outcome = await self.execute(self.prepare(call), approver=approver)
            if isinstance(outcome, ApprovalRequired):  # the grant did not match: ask again
                again = await self.pause(call, outcome)
                summary = "not run; it needs approval again"
            elif isinstance(outcome, ToolReply):
                self.append_result(call, outcome)
                summary = outcome.summary or outcome.content[:200]
                undo = (outcome.undo_id, outcome.undo_reason)
            else:  # only a SQL call waits for approval, and it never asks a question
                self.append_result(call, outcome)
                summary = "not run; it needs the person"
        else:
            summary = f"denied by {approver}; not executed"
            await record_pending(self.parts.audit, pending, approver, "denied")
            self.append_result(call, ToolReply(summary))
        await self.save()
        await tell_decided(on_decided, pending, approver, scope, summary, undo)
        if again is not None:
            return self.awaiting(again)
        return await self.carry_on()


async def tell_decided(
    on_decided: OnDecided | None,
    pending: PendingApproval,
    approver: str,
    scope: GrantScope | None,
    summary: str,
    undo: tuple[str | None, str] = (None, ""),
) -> None:
    """Let the adapter show the decision (update the card) before anything else happens."""
    if on_decided is None:
        return
    decision = ApprovalDecision(
        pending=pending,
        approver=approver,
        approved=scope is not None,
        scope=None if scope is None else scope.value,
        summary=summary,
        decided_at=time.time(),
        undo_id=undo[0],
        undo_reason=undo[1],
    )
    try:
        await on_decided(decision)
    except Exception:  # the card update failing must not lose the run
        log.warning("on_decided callback failed", exc_info=True)


def _concurrent(prepared: PreparedCall | ToolReply) -> bool:
    return isinstance(prepared, ToolReply) or prepared.tool.concurrent


def _may_write(prepared: PreparedCall | ToolReply) -> bool:
    if isinstance(prepared, ToolReply) or prepared.tool.may_write is None:
        return False
    return prepared.tool.may_write(prepared.arguments)


def _with_earlier(session: Session) -> list[JsonObject]:
    """The history as sent: the note of dropped exchanges leads its first message (a copy:
    the stored message stays as it was)."""
    note, messages = earlier_note(session.earlier), session.messages
    if not note or not messages or not isinstance(messages[0].get("content"), str):
        return messages
    first = {**messages[0], "content": f"{note}\n\n{messages[0]['content']}"}
    return [first, *messages[1:]]


@functools.cache
def _specs_tokens(mode: Mode) -> int:
    return estimate_tokens(tools.specs_for(mode))


def find_call(messages: list[JsonObject], call_id: str) -> ToolCall | None:
    for call in open_calls(messages):
        if call.id == call_id:
            return call
    return None
