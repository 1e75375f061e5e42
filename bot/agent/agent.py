"""The Agent: the entry points an adapter (Slack, the console) calls.

Runs of one session never overlap: each holds the session's lease from the state (first
come, first served; across processes when they share Redis). Different sessions run
concurrently.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from bot.agent.loop import (
    OnDecided,
    Parts,
    Runner,
    find_call,
    open_calls,
    record_pending,
    tell_decided,
    tool_message,
)
from bot.agent.model import ModelClient
from bot.agent.outcomes import (
    AlreadyDecided,
    Answer,
    ApprovalExpired,
    AwaitingApproval,
    Failed,
    Interrupted,
    NotYourQuestion,
    Outcome,
    PendingApproval,
    Progress,
    Question,
    Requester,
    SelfApprovalRefused,
)
from bot.agent.recovery import OUTCOME_UNKNOWN, interrupted_change, is_call_of
from bot.agent.sessions import Session, Sessions, SessionStatus
from bot.agent.skills import Skills
from bot.agent.tools import ApprovalRequired, QuestionRequired, ToolContext
from bot.agent.tools.approved import mint_grant
from bot.agent.tools.query import QueryParameters, execute_query
from bot.agent.undo import UNDO, undo_card
from bot.config import Environment, Mode, Settings
from bot.db.images import TableImage
from bot.db.types import DbError
from bot.db.undo import rows_took_the_change
from bot.state import GrantScope, State
from bot.state.executions import ExecutionRecord, Phase

if TYPE_CHECKING:
    from bot.db import DatabaseRegistry

log = logging.getLogger(__name__)

SUPERSEDED_PENDING = "not approved; superseded by a new message"
SUPERSEDED_QUESTION = "not answered; superseded by a new message"
EXPIRED_CALL = "not approved; the approval request expired"
DIRECT = "direct"  # a person's Run button: an approval that resumes no model run
SUPERSEDED_CALL = "not run; superseded by a new message"
STOPPED_CALL = "not run; the previous run stopped before this call ran"
INTERRUPTED = "interrupted: the bot stopped during this run"
SELF_APPROVAL = (
    "You asked for this change, so you cannot approve it yourself: another approver must "
    "(four eyes)."
)


@dataclass(frozen=True, slots=True)
class DirectRun:
    """What a person's Run (or an approved direct card) ended in, with its undo."""

    outcome: Answer | Failed
    undo_id: str | None = None
    undo_reason: str = ""


def _narrowest(chosen: tuple[str, ...], scope: GrantScope) -> GrantScope:
    """A thread grant only when every approver chose it."""
    if scope is GrantScope.ONCE or GrantScope.ONCE.value in chosen:
        return GrantScope.ONCE
    return GrantScope.THREAD


STOPPED_BY = "stopped by"


class Agent:
    def __init__(
        self,
        *,
        settings: Settings,
        state: State,
        databases: DatabaseRegistry,
        model: ModelClient,
        skills: Skills,
    ) -> None:
        self.settings = settings
        self.state = state
        self.sessions = Sessions(state.sessions)
        self.audit = state.audit
        self.grants = state.grants
        self.executions = state.executions
        self._parts = Parts(
            settings=settings,
            state=state,
            sessions=self.sessions,
            databases=databases,
            model=model,
            skills=skills,
            grants=self.grants,
            audit=self.audit,
        )
        self._locks = state.leases
        # The model run of each session now working, so a person can stop it.
        self._runs: dict[str, asyncio.Task[Outcome]] = {}
        self._stopped_by: dict[str, str] = {}

    async def handle_message(
        self,
        session_id: str,
        text: str,
        *,
        requester: Requester,
        mode: Mode,
        progress: Progress | None = None,
    ) -> Outcome:
        async with self._locks.hold(session_id):
            session = await self.sessions.load_or_create(session_id, mode)
            question = await self._open_question(session)
            if (
                question is not None
                and question.kind == "input"
                and question.requester == requester.user_id
            ):
                # A free-text question is answered by replying in the thread.
                return await self._answer_locked(session, question, text, text, progress)
            session.mode = mode
            session.requester = requester
            await self._close_open_calls(session)
            session.messages.append({"role": "user", "content": text})
            session.status = SessionStatus.RUNNING
            session.last_error = None
            session.iterations = 0
            await self.sessions.save(session)
            runner = Runner(self._parts, session, progress)
            return await self._stoppable(session_id, runner.guarded(runner.loop))

    async def _stoppable(self, session_id: str, run: Awaitable[Outcome]) -> Outcome:
        """Run `run` as its own task, which `stop` may cancel: a statement it is running is
        killed on the server (the data layer's cancellation path), and the session records
        who stopped it, so the model hears of it at the next message."""
        task = asyncio.ensure_future(run)
        self._runs[session_id] = task
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            by = self._stopped_by.pop(session_id, None)
            if by is None or not task.cancelled():
                task.cancel()
                raise
            await self._record_stop(session_id, by)
            return Failed(f"{STOPPED_BY} <@{by}>")
        finally:
            if self._runs.get(session_id) is task:
                del self._runs[session_id]
                self._stopped_by.pop(session_id, None)

    async def stop(self, session_id: str, *, by: str) -> bool:
        """Cancel the session's running model run; False when none is running. Returns once
        the run has ended (its statement killed, the session saved)."""
        task = self._runs.get(session_id)
        if task is None or task.done():
            return False
        self._stopped_by[session_id] = by
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return True

    async def _record_stop(self, session_id: str, by: str) -> None:
        session = await self.sessions.load(session_id)
        if session is None:
            return
        note = f"{STOPPED_BY} <@{by}>"
        for call in open_calls(session.messages):
            session.messages.append(tool_message(call.id, f"not finished; {note}"))
        session.messages.append({"role": "assistant", "content": f"({note} before I finished.)"})
        session.status = SessionStatus.IDLE
        session.last_error = note
        session.iterations = 0
        await self.sessions.save(session)

    async def waiting_approvals(self) -> list[PendingApproval]:
        """Every approval not yet decided, oldest first."""
        return [PendingApproval.from_json(data) for data in await self.state.pending.waiting()]

    async def approve(
        self,
        pending_id: str,
        *,
        approver: str,
        scope: GrantScope,
        progress: Progress | None = None,
        on_decided: OnDecided | None = None,
    ) -> Outcome:
        return await self._decide(pending_id, approver, GrantScope(scope), progress, on_decided)

    async def deny(
        self,
        pending_id: str,
        *,
        approver: str,
        progress: Progress | None = None,
        on_decided: OnDecided | None = None,
    ) -> Outcome:
        return await self._decide(pending_id, approver, None, progress, on_decided)

    async def answer(
        self,
        question_id: str,
        *,
        user: str,
        answer: str,
        value: str | None = None,
        progress: Progress | None = None,
    ) -> Outcome:
        """The person's answer to an ask_user question; the run resumes with it. Raises
        NotYourQuestion for anyone but the person asked, AlreadyDecided when it is gone."""
        question = await self.question(question_id)
        if question is None:
            raise AlreadyDecided(question_id)
        if question.requester != user:
            raise NotYourQuestion(question_id)
        async with self._locks.hold(question.session_id):
            session = await self.sessions.load(question.session_id)
            if session is None or session.question_id != question_id:
                raise AlreadyDecided(question_id)
            return await self._answer_locked(
                session, question, answer, answer if value is None else value, progress
            )

    async def question(self, question_id: str) -> Question | None:
        data = await self.state.questions.get(question_id)
        return None if data is None else Question.from_json(data)

    async def run_statement(
        self,
        session_id: str,
        *,
        database: str,
        sql: str,
        requester: Requester,
        progress: Progress | None = None,
    ) -> Outcome:
        """A person's Run button: the same classifier, guard, grants and audit as
        execute_query, as the person who clicked. Reads run at once; a write on a
        non-production database returns AwaitingApproval (a card); refusals are Failed."""
        context = self._direct_context(session_id, requester, approver=None)
        if progress is not None:
            await progress(f"Running query on {database}…")
        outcome = await self._direct_execute(context, database, sql)
        if isinstance(outcome, DirectRun):
            return outcome.outcome
        pending = PendingApproval(
            id=uuid.uuid4().hex,
            session_id=session_id,
            tool_call_id="",
            database=outcome.database,
            environment=outcome.environment,
            risk=outcome.risk,
            sql=outcome.sql,
            requester=requester.user_id,
            created_at=time.time(),
            reason=outcome.reason,
            kind=DIRECT,
            impact=outcome.impact,
            required=self.settings.approvals.required_for(Environment(outcome.environment)),
        )
        await self.state.pending.add(pending.to_json())
        return AwaitingApproval(pending)

    async def pending(self, pending_id: str) -> PendingApproval | None:
        data = await self.state.pending.get(pending_id)
        return None if data is None else PendingApproval.from_json(data)

    async def session(self, session_id: str) -> Session | None:
        return await self.sessions.load(session_id)

    async def recover(self) -> list[Interrupted]:
        """At start: runs the last process left `running` are `interrupted`. Sessions awaiting
        approval stay as they are: their pending records are in the store, and a click
        resumes them here. Approved changes it stopped while they ran are never re-run: each
        is audited as `outcome unknown`, its paused call (if any) answered with what is
        known, its grant dropped, and it is returned for the adapter to tell the thread."""

        count = 0
        for session_id in await self.sessions.running():
            if await self.state.leases.held(session_id):  # another replica runs it now
                continue
            session = await self.sessions.load(session_id)
            if session is None or session.status is not SessionStatus.RUNNING:
                continue
            session.status = SessionStatus.INTERRUPTED
            session.last_error = INTERRUPTED
            await self.sessions.save(session)
            count += 1
        if count:
            log.info("%d session(s) were interrupted by a restart", count)
        interrupted = []
        for record in await self.executions.unfinished():
            if await self.state.leases.held(record.session_id):  # running on another replica
                continue
            # The claim first: of the processes starting at once, one reports it.
            if not await self.executions.interrupt(record.id, OUTCOME_UNKNOWN):
                continue
            item = interrupted_change(record, await self._rows_took_it(record))
            await self.audit.record(
                session_id=record.session_id,
                requester=record.requester,
                approver=record.approver,
                database=record.database,
                environment=record.environment,
                risk="write",
                sql=record.sql,
                outcome=OUTCOME_UNKNOWN,
                error=item.text,
                execution_id=record.id,
            )
            await self._answer_interrupted_call(record, item.text)
            interrupted.append(item)
        dropped = await self.grants.drop_held()
        if interrupted or dropped:
            log.warning(
                "%d approved change(s) were cut off by a stop; %d grant(s) dropped",
                len(interrupted),
                dropped,
            )
        return interrupted

    async def undo(self, undo_id: str, *, requester: Requester, session_id: str) -> Outcome:
        """The inverse of an approved change, as a new card under the same rules (impact,
        four eyes, bound). Rows changed since are conflicts: listed, and skipped."""
        outcome = await undo_card(
            self._parts, self.executions, undo_id, requester=requester, session_id=session_id
        )
        if isinstance(outcome, AwaitingApproval):
            await self.state.pending.add(outcome.pending.to_json())
            await record_pending(self.audit, outcome.pending, None, "awaiting_approval")
        return outcome

    async def _rows_took_it(self, record: ExecutionRecord) -> bool | None:
        """For a stop during COMMIT: whether the rows hold what the change wrote (None when
        they cannot tell, or the database cannot be read now)."""
        if record.phase is not Phase.COMMITTING or record.undo_id is None:
            return None
        undo = await self.executions.undo(record.undo_id)
        if undo is None:
            return None
        try:
            database = self._parts.databases.get(record.database)
            images = [TableImage.from_json(image) for image in undo.images]
            return await rows_took_the_change(database, images)
        except DbError as exc:
            log.warning("could not read back change %s: %s", record.id, exc.message)
            return None

    async def _answer_interrupted_call(self, record: ExecutionRecord, text: str) -> None:
        """The paused execute_query that was running learns what is known, so the model does
        not take the call for one that never ran."""
        async with self._locks.hold(record.session_id):
            session = await self.sessions.load(record.session_id)
            if session is None:
                return
            for call in open_calls(session.messages):
                if call.name == "execute_query" and is_call_of(call.arguments, record):
                    session.messages.append(tool_message(call.id, f"Error: {text}"))
                    await self.sessions.save(session)
                    return

    # -----------------------------------------------------------------------------------
    async def _decide(
        self,
        pending_id: str,
        approver: str,
        scope: GrantScope | None,
        progress: Progress | None,
        on_decided: OnDecided | None,
    ) -> Outcome:
        record = await self.state.pending.get(pending_id)
        if record is None:
            raise AlreadyDecided(pending_id)
        if time.time() - float(record.get("created_at") or 0) > self.settings.limits.approval_ttl_s:
            await self._expire(pending_id)
            raise ApprovalExpired(pending_id)
        if scope is not None:
            self._refuse_self_approval(PendingApproval.from_json(record), approver)
        if record.get("kind") in (DIRECT, UNDO):
            claim = await self._claim(pending_id, approver, scope)
            if isinstance(claim, AwaitingApproval):
                return claim
            return await self._decide_direct(claim, approver, scope, on_decided)
        async with self._locks.hold(record["session_id"]):
            # The claim: exactly one click gets the record; a second one finds it gone.
            claim = await self._claim(pending_id, approver, scope)
            if isinstance(claim, AwaitingApproval):
                return claim
            pending = claim
            session = await self.sessions.load(pending.session_id)
            call = None if session is None else find_call(session.messages, pending.tool_call_id)
            if session is None or session.pending_id != pending_id or call is None:
                log.warning("pending approval %s has no paused run to resume", pending_id)
                raise AlreadyDecided(pending_id)
            runner = Runner(self._parts, session, progress)
            granted = None if scope is None else _narrowest(claim.scopes, scope)
            resumed = runner.guarded(
                lambda: runner.decide(
                    pending, call, approver=approver, scope=granted, on_decided=on_decided
                )
            )
            return await self._stoppable(pending.session_id, resumed)

    def _refuse_self_approval(self, pending: PendingApproval, approver: str) -> None:
        if self.settings.approvals.allow_self_approval or approver != pending.requester:
            return
        raise SelfApprovalRefused(pending.id, SELF_APPROVAL)

    def _required(self, pending: PendingApproval) -> int:
        try:
            environment = Environment(pending.environment)
        except ValueError:
            return max(pending.required, self.settings.approvals.required)
        return max(pending.required, self.settings.approvals.required_for(environment))

    async def _claim(
        self, pending_id: str, approver: str, scope: GrantScope | None
    ) -> PendingApproval | AwaitingApproval:
        """One atomic step of the store: a deny, or the approval that completes the count, takes
        the record (exactly one click can); an earlier approval is counted (once per person)
        and the record stays, awaiting the next approver."""

        def tally(
            data: dict[str, Any],
        ) -> tuple[dict[str, Any] | None, tuple[bool, PendingApproval]]:
            pending = PendingApproval.from_json(data)
            if scope is None:
                return None, (True, pending)
            if approver not in pending.approvals:
                pending = replace(
                    pending,
                    approvals=(*pending.approvals, approver),
                    scopes=(*pending.scopes, scope.value),
                )
            if len(pending.approvals) >= self._required(pending):
                return None, (True, pending)
            return pending.to_json(), (False, pending)

        found, claimed = await self.state.pending.update(pending_id, tally)
        if not found or claimed is None:
            raise AlreadyDecided(pending_id)
        complete, pending = claimed
        if not complete:
            counted = f"approved ({len(pending.approvals)} of {self._required(pending)})"
            await record_pending(self.audit, pending, approver, counted)
            return AwaitingApproval(pending)
        return pending

    async def _expire(self, pending_id: str) -> None:
        """An undecided approval past its lifetime: drop it, tell the audit log, and answer
        the paused call (if any) so the thread can go on."""
        claimed = await self.state.pending.claim(pending_id)
        if claimed is None:
            return
        pending = PendingApproval.from_json(claimed)
        await record_pending(self.audit, pending, None, "expired")
        if pending.kind in (DIRECT, UNDO):
            return
        async with self._locks.hold(pending.session_id):
            session = await self.sessions.load(pending.session_id)
            if session is None or session.pending_id != pending_id:
                return
            session.messages.append(tool_message(pending.tool_call_id, EXPIRED_CALL))
            session.pending_id = None
            session.status = SessionStatus.IDLE
            await self.sessions.save(session)

    async def _open_question(self, session: Session) -> Question | None:
        if session.question_id is None:
            return None
        return await self.question(session.question_id)

    async def _answer_locked(
        self,
        session: Session,
        question: Question,
        answer: str,
        value: str,
        progress: Progress | None,
    ) -> Outcome:
        claimed = await self.state.questions.claim(question.id)
        call = find_call(session.messages, question.tool_call_id)
        if claimed is None or call is None:
            raise AlreadyDecided(question.id)
        runner = Runner(self._parts, session, progress)
        return await runner.guarded(lambda: runner.answered(question, call, answer, value))

    def _direct_context(
        self, session_id: str, requester: Requester, approver: str | None
    ) -> ToolContext:
        # A person's click: execute_query's own path, whatever the thread's mode.
        return self._parts.context(session_id, requester, Mode.AGENT, approver)

    async def _direct_execute(
        self, context: ToolContext, database: str, sql: str
    ) -> DirectRun | ApprovalRequired:
        try:
            outcome = await execute_query(context, QueryParameters(database=database, sql=sql))
        except DbError as exc:  # an unknown database
            return DirectRun(Failed(f"Error: {exc.message}"))
        if isinstance(outcome, ApprovalRequired):
            return outcome
        if isinstance(outcome, QuestionRequired):  # execute_query never asks; fail closed
            return DirectRun(Failed("Error: this statement could not be run"))
        if outcome.content.startswith(("Error:", "Blocked:")):
            return DirectRun(Failed(outcome.content), outcome.undo_id, outcome.undo_reason)
        results = () if outcome.result is None else (outcome.result,)
        answer = Answer(text=f"Ran on {database}: {outcome.summary}", results=results)
        return DirectRun(answer, outcome.undo_id, outcome.undo_reason)

    async def _decide_direct(
        self,
        pending: PendingApproval,
        approver: str,
        scope: GrantScope | None,
        on_decided: OnDecided | None,
    ) -> Outcome:
        requester = Requester(user_id=pending.requester)
        outcome: Outcome
        undo: tuple[str | None, str] = (None, "")
        granted = None if scope is None else _narrowest(pending.scopes, scope)
        if granted is None:
            summary = f"denied by {approver}; not executed"
            await record_pending(self.audit, pending, approver, "denied")
            outcome = Answer(text=f"Not run: {summary}.")
        else:
            await mint_grant(self.grants, self.settings, pending, granted, approver)
            context = self._direct_context(pending.session_id, requester, approver=approver)
            result = await self._direct_execute(context, pending.database, pending.sql)
            if isinstance(result, ApprovalRequired):  # the grant did not match: fail closed
                outcome = Failed("Error: the approval did not match the statement; not run")
            else:
                outcome, undo = result.outcome, (result.undo_id, result.undo_reason)
            summary = outcome.message if isinstance(outcome, Failed) else outcome.text
        await tell_decided(on_decided, pending, approver, granted, summary, undo)
        return outcome

    async def _close_open_calls(self, session: Session) -> None:
        """Before a new message: answer every call the last turn left open, so the history
        stays valid. A pending approval is superseded, and its record deleted."""
        pending_call = None
        pending_id = session.pending_id
        if pending_id is not None:
            record = await self.state.pending.claim(pending_id)
            if record is not None:
                pending = PendingApproval.from_json(record)
                pending_call = pending.tool_call_id
                await record_pending(self.audit, pending, None, "superseded")
        question_call = None
        question_id = session.question_id
        if question_id is not None:
            record = await self.state.questions.claim(question_id)
            if record is not None:
                question_call = record["tool_call_id"]
        superseding = session.status in (
            SessionStatus.AWAITING_APPROVAL,
            SessionStatus.AWAITING_REPLY,
        )
        for call in open_calls(session.messages):
            if call.id == pending_call:
                content = SUPERSEDED_PENDING
            elif call.id == question_call:
                content = SUPERSEDED_QUESTION
            else:
                content = SUPERSEDED_CALL if superseding else STOPPED_CALL
            session.messages.append(tool_message(call.id, content))
        session.pending_id = None
        session.question_id = None
