"""The Agent: the entry points an adapter (Slack, the console) calls.

Runs of one session never overlap: each holds the session's lease from the state (first
come, first served; across processes when they share Redis). Different sessions run
concurrently.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from bot.agent.loop import (
    OnDecided,
    Parts,
    Runner,
    find_call,
    open_calls,
    tell_decided,
    tool_message,
)
from bot.agent.model import ModelClient
from bot.agent.outcomes import (
    Answer,
    AwaitingApproval,
    Failed,
    Interrupted,
    NotYourQuestion,
    Outcome,
    Progress,
    Question,
    Recovered,
    Requester,
    RunInterrupted,
    RunResumable,
    Step,
    Stopped,
)
from bot.agent.recovery import OUTCOME_UNKNOWN, interrupted_change, is_call_of
from bot.agent.runs import (
    INTERRUPTED,
    INTERRUPTED_CALL,
    INTERRUPTED_CHANGE,
    Runs,
    database_and_sql,
    outstanding_write,
    stopped_call,
    stopped_note,
)
from bot.agent.sessions import Session, Sessions, SessionStatus
from bot.agent.skills import Skills
from bot.agent.tools import ApprovalRequired, QuestionRequired, ToolContext
from bot.agent.tools.query import QueryParameters, execute_query
from bot.agent.turns import ToolCall
from bot.agent.undo import undo_card
from bot.changes.decide import decide, record_pending
from bot.changes.grants import mint_grant
from bot.changes.types import (
    DIRECT,
    UNDO,
    AlreadyDecided,
    Approved,
    Counted,
    PendingApproval,
    Verdict,
)
from bot.config import Environment, Mode, Settings
from bot.db.images import TableImage
from bot.db.roles import acting_as
from bot.db.types import DbError
from bot.db.undo import rows_took_the_change
from bot.observability import observe
from bot.state import GrantScope, State, StateError
from bot.state.executions import ExecutionRecord, Phase, call_execution_id
from bot.state.requests import RequestStatus

if TYPE_CHECKING:
    from bot.db import DatabaseRegistry

log = logging.getLogger(__name__)

SUPERSEDED_PENDING = "not approved; superseded by a new message"
SUPERSEDED_QUESTION = "not answered; superseded by a new message"
EXPIRED_CALL = "not approved; the approval request expired"
FINISHED_CALL = "ran to its end before the bot stopped (its result was not kept)"
SUPERSEDED_CALL = "not run; superseded by a new message"
STOPPED_CALL = "not run; the previous run stopped before this call ran"


@dataclass(frozen=True, slots=True)
class DirectRun:
    """What a person's Run (or an approved direct card) ended in, with its undo."""

    outcome: Answer | Failed
    undo_id: str | None = None
    undo_reason: str = ""
    content: str = ""  # the tool's own reply (JSON: rows, affected_rows), for a client


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
        self._runs = Runs()

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
            if session.stopped_by is not None:
                text = f"{stopped_note(session.stopped_by)}\n\n{text}"
                session.stopped_by = None
            session.messages.append({"role": "user", "content": text})
            session.status = SessionStatus.RUNNING
            session.last_error = None
            session.iterations = 0
            await self.sessions.save(session)
            runner = Runner(self._parts, session, progress)
            return await self._run(runner, runner.loop)

    async def stop(self, session_id: str, *, by: str) -> bool:
        """Cancel the session's running run, on behalf of `by` (a user id): a statement it
        is running is killed on the server, the session is left consistent, and the model
        hears who stopped it with the next message. Returns once the run has ended; False
        when nothing was running."""
        return await self._runs.stop(session_id, by)

    def is_running(self, session_id: str) -> bool:
        return self._runs.is_running(session_id)

    async def _run(self, runner: Runner, step: Callable[[], Awaitable[Outcome]]) -> Outcome:
        with observe.turn(runner.session.id, runner.session.mode.value) as turn:
            return turn.ended(
                await self._runs.run(
                    runner.session.id, runner.guarded(step), lambda by: self._stopped(runner, by)
                )
            )

    async def _stopped(self, runner: Runner, by: str) -> Stopped:
        """A stopped run leaves its session consistent: every open call answered."""
        session = runner.session
        for call in open_calls(session.messages):
            session.messages.append(tool_message(call.id, stopped_call(by)))
        if session.pending_id is not None or session.question_id is not None:
            await self._close_open_calls(session)
        session.status = SessionStatus.IDLE
        session.last_error = f"stopped by {by}"
        session.iterations = 0
        session.stopped_by = by
        await self.sessions.save(session)
        return Stopped("stopped before it finished", results=tuple(runner.results), by=by)

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

    async def resume(self, session_id: str, *, progress: Progress | None = None) -> Outcome:
        """Carry on a run `recover` found resumable (RunResumable): its reads are run again
        and the model is asked again. Failed when the session is not resumable (any more)."""
        async with self._locks.hold(session_id):
            session = await self.sessions.load(session_id)
            if (
                session is None
                or session.status is not SessionStatus.INTERRUPTED
                or session.last_error != INTERRUPTED
                or await self._sent_write(session) is not None
            ):
                return Failed("Error: there is no interrupted run to resume in this thread")
            session.status = SessionStatus.RUNNING
            session.last_error = None
            runner = Runner(self._parts, session, progress)
            return await self._run(runner, runner.carry_on)

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
        non-production database returns AwaitingApproval (a card); refusals are Failed.
        `stop(session_id)` cancels it like a model's run (Stopped; its statement killed)."""

        async def stopped(by: str) -> Outcome:
            return Stopped("stopped before it finished", by=by)

        work = self._run_statement(session_id, database, sql, requester, progress)
        return await self._runs.run(session_id, work, stopped)

    async def _run_statement(
        self,
        session_id: str,
        database: str,
        sql: str,
        requester: Requester,
        progress: Progress | None,
    ) -> Outcome:
        context = self._direct_context(session_id, requester, approver=None)
        step = Step(uuid.uuid4().hex, f"Running query on {database}", "in_progress")
        if progress is not None:
            await progress(step)
        outcome = await self._direct_execute(context, database, sql)
        if progress is not None:
            await progress(_step_end(step, outcome))
        if isinstance(outcome, DirectRun):
            return outcome.outcome
        return AwaitingApproval(await self.propose(session_id, outcome, requester))

    def tool_context(self, session_id: str, requester: Requester, *, origin: str) -> ToolContext:
        """What the tools need to run for a caller outside any model run (an MCP client): the
        agent mode's tools, as `requester`, audited with `origin`."""
        return self._parts.context(session_id, requester, Mode.AGENT, None, origin)

    async def propose(
        self,
        session_id: str,
        change: ApprovalRequired,
        requester: Requester,
        *,
        origin: str = "",
    ) -> PendingApproval:
        """A change that waits for its approvers and resumes no model run when decided (a
        person's Run button, an MCP client's call): stored as a direct pending approval in
        `session_id`, where its card is; the last approval runs it, once."""
        pending = PendingApproval(
            id=uuid.uuid4().hex,
            session_id=session_id,
            tool_call_id="",
            database=change.database,
            environment=change.environment,
            risk=change.risk,
            sql=change.sql,
            requester=requester.user_id,
            created_at=time.time(),
            reason=change.reason,
            kind=DIRECT,
            impact=change.impact,
            required=self.settings.approvals.required_for(Environment(change.environment)),
            origin=origin,
            role=change.role,
        )
        await self.state.pending.add(pending.to_json())
        return pending

    async def pending(self, pending_id: str) -> PendingApproval | None:
        data = await self.state.pending.get(pending_id)
        return None if data is None else PendingApproval.from_json(data)

    async def session(self, session_id: str) -> Session | None:
        return await self.sessions.load(session_id)

    async def recover(self, *, at_start: bool = True) -> list[Recovered]:
        """At start (and on a fleet, whenever a session's lease expired), what a process
        that stopped left going. Approved changes it stopped while they
        ran are never re-run: each is audited as `outcome unknown`, its paused call answered
        with what is known, its grant dropped, and it is returned (Interrupted) for the
        adapter to tell the thread. Every other run it left `running` becomes `interrupted`
        and is returned as RunResumable when it was reading or thinking (`resume` carries it
        on), or as RunInterrupted when a call that may change data was outstanding (its open
        calls are answered as interrupted). Sessions awaiting approval stay as they are:
        their pending records are in the store, and a click resumes them here."""
        # Runs another replica holds the lease of are going on there, not interrupted.
        running = [
            session_id
            for session_id in await self.sessions.running()
            if not await self.state.leases.held(session_id)
        ]
        found: list[Recovered] = []
        unfinished = await self.executions.unfinished()
        # Told by the change's record, whichever of the processes starting at once claims it.
        told = {record.session_id for record in unfinished}
        for record in unfinished:
            if await self.state.leases.held(record.session_id):  # running on another replica
                continue
            item = await self._report_interrupted(record)
            if item is not None:
                found.append(item)
        # Held grants are dropped at start only: later, other replicas' executions hold some.
        dropped = await self.grants.drop_held() if at_start else 0
        if found or dropped:
            log.warning(
                "%d approved change(s) were cut off by a stop; %d grant(s) dropped",
                len(found),
                dropped,
            )
        for session_id in running:
            async with self._locks.hold(session_id):  # another process starting takes it once
                session = await self.sessions.load(session_id)
                if session is not None and session.status is SessionStatus.RUNNING:
                    found.extend(await self._recover_run(session, told=session_id in told))
        return found

    async def _report_interrupted(self, record: ExecutionRecord) -> Interrupted | None:
        """Audit a change a stop cut off, then close its record. Under the session's lease,
        so of the processes starting at once one reports it; the audit first, so a stop
        in between leaves the record open and the next start reports it again (twice rather
        than never). None when another process reported it meanwhile."""
        async with self._locks.hold(record.session_id):
            current = await self.executions.get(record.id)
            if current is None or current.phase not in (Phase.EXECUTING, Phase.COMMITTING):
                return None
            item = interrupted_change(current, await self._rows_took_it(current))
            await self.audit.record(
                session_id=current.session_id,
                requester=current.requester,
                approver=current.approver,
                database=current.database,
                environment=current.environment,
                risk="write",
                sql=current.sql,
                outcome=OUTCOME_UNKNOWN,
                error=item.text,
                execution_id=current.id,
                origin=current.origin or None,
                role=current.role or None,
            )
            if not await self.executions.interrupt(current.id, OUTCOME_UNKNOWN):
                return None
            if current.pending_id is not None:  # an outside client may ask after it
                await self._settle_request(
                    current.pending_id,
                    RequestStatus.FAILED,
                    summary=item.text,
                    applied=item.applied,
                )
            await self._answer_interrupted_call(current, item.text)
            return item

    async def _recover_run(self, session: Session, *, told: bool) -> list[Recovered]:
        """A run left `running`: resumable, or interrupted during a possible change (`told`:
        the write-ahead record of that change already tells the thread)."""
        requester = session.requester.user_id if session.requester else ""
        sent = await self._sent_write(session)
        resumable = sent is None and not told
        session.status = SessionStatus.INTERRUPTED
        session.last_error = INTERRUPTED if resumable else INTERRUPTED_CHANGE
        if not resumable:  # a resumed run reads again what it was reading
            for call in open_calls(session.messages):
                content = INTERRUPTED_CALL
                if sent is not None and call.id == sent[0].id and sent[1].outcome:
                    content = f"{FINISHED_CALL}: {sent[1].outcome}"
                session.messages.append(tool_message(call.id, content))
        await self.sessions.save(session)
        if resumable:
            return [RunResumable(session.id, requester)]
        if told or sent is None:
            return []
        database, sql = database_and_sql(sent[0])
        return [RunInterrupted(session.id, requester, database, sql, sent[1].outcome)]

    async def _sent_write(self, session: Session) -> tuple[ToolCall, ExecutionRecord] | None:
        """The session's open call that may have changed data, with its write-ahead record.
        A change is recorded before it is sent, so a call that may write but has no record
        sent nothing (it stopped before its card, during its impact preview, or between the
        Approve click and its record): None, and the call runs again when the run resumes."""
        write = outstanding_write(session)
        if write is None:
            return None
        record = await self.executions.get(call_execution_id(session.id, write.id))
        return None if record is None else (write, record)

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
        not take the call for one that never ran. The caller holds the session's lease."""
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
        async def carry_out(verdict: Verdict) -> Outcome:
            if isinstance(verdict, Counted):
                return AwaitingApproval(verdict.pending)
            granted = verdict.scope if isinstance(verdict, Approved) else None
            if verdict.pending.kind in (DIRECT, UNDO):
                return await self._carry_out_direct(verdict.pending, approver, granted, on_decided)
            return await self._carry_out_call(
                verdict.pending, approver, granted, progress, on_decided
            )

        return await decide(
            self.state,
            pending_id,
            approver=approver,
            scope=scope,
            approvals=self.settings.approvals,
            ttl_s=self.settings.limits.approval_ttl_s,
            expire=self._expire,
            carry_out=carry_out,
        )

    async def _carry_out_call(
        self,
        pending: PendingApproval,
        approver: str,
        granted: GrantScope | None,
        progress: Progress | None,
        on_decided: OnDecided | None,
    ) -> Outcome:
        """The model's paused call, run (or denied) and its run carried on; the caller
        holds the session's lease."""
        session = await self.sessions.load(pending.session_id)
        call = None if session is None else find_call(session.messages, pending.tool_call_id)
        if session is None or session.pending_id != pending.id or call is None:
            log.warning("pending approval %s has no paused run to resume", pending.id)
            raise AlreadyDecided(pending.id)
        runner = Runner(self._parts, session, progress)
        return await self._run(
            runner,
            lambda: runner.carry_out(
                pending, call, approver=approver, scope=granted, on_decided=on_decided
            ),
        )

    async def _expire(self, pending_id: str) -> None:
        """An undecided approval past its lifetime: drop it, tell the audit log, and answer
        the paused call (if any) so the thread can go on."""
        await self._drop(pending_id, "expired", RequestStatus.EXPIRED, EXPIRED_CALL)

    async def withdraw(self, pending_id: str, reason: str) -> bool:
        """An approval nobody can be asked for (its request could not be shown to the
        approvers): dropped like an expired one, so no change waits for a click that cannot
        come. False when it was decided (or dropped) already."""
        summary = f"not run: {reason}"
        return await self._drop(
            pending_id, "withdrawn", RequestStatus.FAILED, summary, summary=summary
        )

    async def _drop(
        self, pending_id: str, outcome: str, status: RequestStatus, call: str, **details: Any
    ) -> bool:
        claimed = await self.state.pending.claim(pending_id)
        if claimed is None:
            return False
        pending = PendingApproval.from_json(claimed)
        await record_pending(self.audit, pending, None, outcome)
        await self._settle(pending, status, **details)
        if pending.kind in (DIRECT, UNDO):
            return True
        async with self._locks.hold(pending.session_id):
            session = await self.sessions.load(pending.session_id)
            if session is None or session.pending_id != pending_id:
                return True
            session.messages.append(tool_message(pending.tool_call_id, call))
            session.pending_id = None
            session.status = SessionStatus.IDLE
            await self.sessions.save(session)
        return True

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
        return await self._run(runner, lambda: runner.answered(question, call, answer, value))

    def _direct_context(
        self, session_id: str, requester: Requester, approver: str | None, origin: str = ""
    ) -> ToolContext:
        # A person's click: execute_query's own path, whatever the thread's mode.
        return self._parts.context(session_id, requester, Mode.AGENT, approver, origin)

    async def _settle(
        self, pending: PendingApproval, status: RequestStatus, **details: Any
    ) -> None:
        """What became of a change an outside client asked for, for it to ask after. A
        failure to note it is logged: the change's own records (audit, write-ahead) stand."""
        if pending.origin:
            await self._settle_request(pending.id, status, **details)

    async def _settle_request(self, request_id: str, status: RequestStatus, **details: Any) -> None:
        try:
            await self.state.requests.settle(request_id, status, **details)
        except StateError as exc:
            log.error("request %s not marked %s: %s", request_id, status.value, exc)

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
            failed = Failed(outcome.content)
            return DirectRun(failed, outcome.undo_id, outcome.undo_reason, outcome.content)
        results = () if outcome.result is None else (outcome.result,)
        answer = Answer(text=f"Ran on {database}: {outcome.summary}", results=results)
        return DirectRun(answer, outcome.undo_id, outcome.undo_reason, outcome.content)

    async def _carry_out_direct(
        self,
        pending: PendingApproval,
        approver: str,
        granted: GrantScope | None,
        on_decided: OnDecided | None,
    ) -> Outcome:
        """A card that resumes no model run (a Run button, an outside client's call, an
        Undo): run with the grant `granted`, or denied (None)."""
        requester = Requester(user_id=pending.requester)
        outcome: Outcome
        undo: tuple[str | None, str] = (None, "")
        if granted is None:
            summary = f"denied by {approver}; not executed"
            await record_pending(self.audit, pending, approver, "denied")
            await self._settle(pending, RequestStatus.DENIED, summary=summary, decided_by=approver)
            outcome = Answer(text=f"Not run: {summary}.")
        else:
            approvers = list(pending.approvals) or [approver]
            await self._settle(pending, RequestStatus.APPROVED, approvers=approvers)
            await mint_grant(self.grants, self.settings, pending, granted, approver)
            context = self._direct_context(
                pending.session_id, requester, approver=approver, origin=pending.origin
            )
            with acting_as(pending.role or None):  # the role its card showed
                result = await self._direct_execute(context, pending.database, pending.sql)
            content = ""
            if isinstance(result, ApprovalRequired):  # the grant did not match: fail closed
                outcome = Failed("Error: the approval did not match the statement; not run")
            else:
                outcome, undo = result.outcome, (result.undo_id, result.undo_reason)
                content = result.content
            summary = outcome.message if isinstance(outcome, Failed) else outcome.text
            await self._settle(
                pending,
                RequestStatus.FAILED if isinstance(outcome, Failed) else RequestStatus.EXECUTED,
                summary=summary,
                result=content,
                undo_available=undo[0] is not None,
                undo_reason=undo[1],
            )
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


def _step_end(step: Step, outcome: DirectRun | ApprovalRequired) -> Step:
    if isinstance(outcome, ApprovalRequired):
        return replace(step, title="Waiting for approval", details=outcome.database)
    if isinstance(outcome.outcome, Failed):
        return replace(step, status="error", details=outcome.outcome.message)
    return replace(step, status="complete", details=outcome.outcome.text)
