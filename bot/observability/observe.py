"""The hooks the rest of the bot calls: each moves its metrics and opens its span, so an
instrumented place needs one line (a decorator, a `with`, or a call).

What reaches a span: names, counts, risks, decisions, HTTP statuses. Never SQL text, row
values, user text or secrets (tests/observability/test_tracing.py holds every attribute of a
turn's spans against the turn's literals).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import re
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import ParamSpec, TypeVar

from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from bot.observability import logs, metrics, tracing

log = logging.getLogger(__name__)
_TOOL_NAME = re.compile(r"[a-z][a-z_]{0,39}")
P = ParamSpec("P")
R = TypeVar("R")

# The names of the agent's outcomes (bot/agent/outcomes.py) as the turns' `outcome` label.
_OUTCOMES = {
    "Answer": "answer",
    "Failed": "failed",
    "AwaitingApproval": "awaiting_approval",
    "AwaitingReply": "awaiting_reply",
    "Stopped": "stopped",
}


class Turn:
    """One run of the agent, open while it runs; `ended(outcome)` names how it ended."""

    def __init__(self, span: Span) -> None:
        self.span = span
        self.outcome = "error"

    def ended(self, outcome: R) -> R:
        self.outcome = _OUTCOMES.get(type(outcome).__name__, "other")
        self.span.set_attribute("dbagent.outcome", self.outcome)
        return outcome


@contextlib.contextmanager
def turn(session_id: str, mode: str) -> Iterator[Turn]:
    """A run of the agent: the root span of its trace (unless an MCP call or a Slack event
    opened one), its session id on every log line, its count and duration."""
    started = time.monotonic()
    with (
        logs.bound(session_id=session_id),
        tracing.span("dbagent.turn", attributes={"dbagent.mode": mode}) as turn_span,
    ):
        current = Turn(turn_span)
        try:
            yield current
        except BaseException as exc:
            current.outcome = (
                "cancelled"
                if isinstance(exc, asyncio.CancelledError | KeyboardInterrupt)
                else "error"
            )
            raise
        finally:
            metrics.turn_ended(current.outcome, started)
            log.debug("run ended: %s after %.3f s", current.outcome, time.monotonic() - started)


def span(
    name: str, **attributes: str | int | float | bool
) -> contextlib.AbstractContextManager[Span]:
    """A span of our own (an MCP call's root, say), under whatever span is current."""
    return tracing.span(name, attributes=attributes)


def mcp_call(func: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """Decorates McpTools.call(client, name, arguments): the root span of an MCP call's trace,
    named by the tool and the configured client (never the arguments)."""

    @functools.wraps(func)
    async def observed(*args: P.args, **kwargs: P.kwargs) -> R:
        client = str(getattr(args[1], "name", "") if len(args) > 1 else "")
        tool = str(args[2]) if len(args) > 2 else ""
        tool = tool if _TOOL_NAME.fullmatch(tool) else "other"  # the client's own words
        attributes = {"gen_ai.tool.name": tool, "dbagent.mcp.client": client}
        with tracing.span("mcp.call", attributes=attributes):
            return await func(*args, **kwargs)

    return observed


# -- the model -------------------------------------------------------------------------------
def model_failure(exc: BaseException) -> str:
    """The bounded kind of a failed model call: its HTTP status, or timeout, connection,
    unreadable."""
    cause = exc.__cause__ or exc
    status = getattr(cause, "status_code", None)
    if isinstance(status, int):
        return str(status)
    name = type(cause).__name__
    if "Timeout" in name:
        return "timeout"
    if "Connection" in name:
        return "connection"
    return "unreadable"


def model_call(func: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """Decorates ModelClient.complete: duration, tokens, failures by status; a GenAI span."""

    @functools.wraps(func)
    async def observed(*args: P.args, **kwargs: P.kwargs) -> R:
        model = str(getattr(args[0], "model", "") or "")
        started = time.monotonic()
        attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.system": "openai",
            "gen_ai.request.model": model,
        }
        name = f"chat {model}".strip()
        with tracing.span(name, kind=SpanKind.CLIENT, attributes=attributes) as current:
            try:
                answer = await func(*args, **kwargs)
            except Exception as exc:
                failure = model_failure(exc)
                metrics.model_called(started, status=failure, prompt=0, completion=0)
                current.set_attribute("error.type", failure)
                current.set_status(Status(StatusCode.ERROR))
                raise
            usage = getattr(answer, "usage", None)
            prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
            completion = int(getattr(usage, "completion_tokens", 0) or 0)
            metrics.model_called(started, status=None, prompt=prompt, completion=completion)
            current.set_attribute("gen_ai.usage.input_tokens", prompt)
            current.set_attribute("gen_ai.usage.output_tokens", completion)
            calls = getattr(answer, "tool_calls", ())
            current.set_attribute(
                "gen_ai.response.finish_reasons", ["tool_calls" if calls else "stop"]
            )
            return answer

    return observed


# -- tools and the guard ---------------------------------------------------------------------
def tool_outcome(outcome: object) -> str:
    kind = type(outcome).__name__
    if kind == "ApprovalRequired":
        return "approval"
    if kind == "QuestionRequired":
        return "question"
    content = str(getattr(outcome, "content", ""))
    if content.startswith("Blocked:"):
        return "blocked"
    return "error" if content.startswith("Error:") else "ok"


def tool_call(func: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """Decorates the tool registry's `run(prepared, context)`: count, duration, a span."""

    @functools.wraps(func)
    async def observed(*args: P.args, **kwargs: P.kwargs) -> R:
        tool = str(getattr(getattr(args[0], "tool", None), "name", "") or "unknown")
        started = time.monotonic()
        with tracing.span(
            f"execute_tool {tool}",
            attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool},
        ) as current:
            outcome = "error"
            try:
                result = await func(*args, **kwargs)
                outcome = tool_outcome(result)
                current.set_attribute("dbagent.tool.outcome", outcome)
                return result
            finally:
                metrics.tool_called(tool, outcome, started)

    return observed


def guard_decided(risk: str, decision: object) -> None:
    """The guard's decision on a statement, as a span: its risk, decision and (for a refusal)
    the class of the reason — not the reason, which may quote the statement."""
    kind = type(decision).__name__
    word = {"Run": "run", "NeedsApproval": "approval", "Refused": "refused"}.get(kind, "other")
    attributes: dict[str, str] = {"dbagent.risk": risk, "dbagent.decision": word}
    if word == "refused":
        attributes["dbagent.refusal_class"] = metrics.refusal_class(getattr(decision, "reason", ""))
    with tracing.span("dbagent.guard", attributes=attributes):
        pass


def statement_recorded(risk: str, outcome: str, error: str | None) -> None:
    metrics.statement_recorded(risk, outcome, error)


def approval_decided(outcome: str) -> None:
    metrics.approval_decided(outcome)


# -- the database ----------------------------------------------------------------------------
def db_statement(func: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """Decorates Session.fetch(sql, …): one span per statement sent, named by its operation
    (SELECT, UPDATE…); the text stays out."""

    @functools.wraps(func)
    async def observed(*args: P.args, **kwargs: P.kwargs) -> R:
        if not tracing.enabled():  # the statement's operation is not worth finding
            return await func(*args, **kwargs)
        from bot.sql.operation import operation_name

        session, sql = args[0], str(args[1]) if len(args) > 1 else ""
        pool = getattr(session, "pool", None)
        flavour = "mariadb" if getattr(pool, "is_mariadb", False) else "mysql"
        operation = operation_name(sql)
        attributes: dict[str, str | bool] = {
            "db.system.name": flavour,
            "db.system": flavour,
            "db.operation.name": operation,
            "dbagent.database": str(getattr(pool, "database_name", "") or ""),
            "dbagent.read_only": bool(getattr(session, "read_only", False)),
        }
        with tracing.span(operation, kind=SpanKind.CLIENT, attributes=attributes) as current:
            try:
                return await func(*args, **kwargs)
            except Exception as exc:
                current.set_attribute("error.type", type(exc).__name__)
                current.set_status(Status(StatusCode.ERROR))
                raise

    return observed


def statement_killed(reached: bool) -> None:
    metrics.statement_killed(reached)


# -- Slack, the store, leases, progress ------------------------------------------------------
def state_error(store: str) -> None:
    metrics.state_error(store)


def lease_held() -> contextlib.AbstractContextManager[None]:
    """Around the time a session's lease is held."""
    return metrics.LEASES_HELD.track_inprogress()


class FirstProgress:
    """Made when a Slack message is taken; `shown()` at each progress update sent, the first
    of which is timed."""

    def __init__(self) -> None:
        self._started: float | None = time.monotonic()

    def shown(self) -> None:
        if self._started is not None:
            metrics.first_progress(time.monotonic() - self._started)
            self._started = None
