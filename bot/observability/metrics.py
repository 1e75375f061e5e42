"""Every Prometheus series the bot exports, and the one-line hooks the code calls to move them.

Labels are bounded: tool names, risks, decisions, outcomes, Slack method names and HTTP
statuses — never SQL, user ids, channel ids or database names a person typed.

`serve --workers N` runs prometheus_client's multiprocess mode: the supervisor gives every
worker one PROMETHEUS_MULTIPROC_DIR (a fresh temporary directory unless it is set), each
worker writes its samples there, and `/metrics` on any worker answers the sum of all of them
(`exposition`). Gauges name how they combine: leases held add up (`livesum`); the pending
approvals, read from the shared store at each scrape, are the latest reading (`mostrecent`).
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Iterable
from typing import Any

from prometheus_client import Counter, Gauge, Histogram

PREFIX = "dbagent_"
_SECONDS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
_FAST = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

TURNS = Counter("dbagent_turns", "Runs of the agent (a message, a click, an answer)", ["outcome"])
TURN_SECONDS = Histogram(
    "dbagent_turn_duration_seconds", "Time from the start of a run to its outcome", buckets=_SECONDS
)
FIRST_PROGRESS_SECONDS = Histogram(
    "dbagent_turn_first_progress_seconds",
    "Time from taking a Slack message to the first progress the person sees",
    buckets=_FAST,
)
MODEL_CALLS = Counter("dbagent_model_calls", "Chat completion requests", ["result"])
MODEL_SECONDS = Histogram(
    "dbagent_model_call_duration_seconds",
    "Time of one model call, retries included",
    buckets=_SECONDS,
)
MODEL_TOKENS = Counter("dbagent_model_tokens", "Tokens the model server counted", ["kind"])
MODEL_ERRORS = Counter(
    "dbagent_model_errors", "Model calls that failed, by HTTP status", ["status"]
)
TOOL_CALLS = Counter("dbagent_tool_calls", "Tool calls the model made", ["tool", "outcome"])
TOOL_SECONDS = Histogram(
    "dbagent_tool_duration_seconds", "Time of one tool call", ["tool"], buckets=_FAST
)
STATEMENTS = Counter(
    "dbagent_statements",
    "SQL statements by risk and what the guard or the server made of them",
    ["risk", "decision", "reason"],
)
APPROVALS_PENDING = Gauge(
    "dbagent_approvals_pending",
    "Changes waiting for an approver (read from the shared store at each scrape)",
    multiprocess_mode="mostrecent",
)
APPROVALS_OLDEST = Gauge(
    "dbagent_approvals_oldest_pending_seconds",
    "Age of the oldest change waiting for an approver (0 when none waits)",
    multiprocess_mode="mostrecent",
)
APPROVALS_DECIDED = Counter(
    "dbagent_approvals_decided", "Approvals that ended, by how", ["outcome"]
)
ROLLBACKS = Counter(
    "dbagent_bounded_rollbacks", "Approved changes rolled back (outside their bounds, or failed)"
)
KILLS = Counter(
    "dbagent_statement_kills",
    "Statements past their timeout, and whether KILL QUERY reached the server",
    ["result"],
)
SLACK_CALLS = Counter(
    "dbagent_slack_calls", "Slack Web API requests (each attempt)", ["method", "result"]
)
STATE_ERRORS = Counter("dbagent_state_errors", "State store operations that failed", ["store"])
LEASES_HELD = Gauge(
    "dbagent_leases_held", "Session leases this process holds now", multiprocess_mode="livesum"
)

# Decisions of dbagent_statements_total: the audit log's outcomes, in four words.
_DECISIONS = {
    "executed": "run",
    "awaiting_approval": "approval",
    "refused": "refused",
    "error": "error",
    "rolled back": "error",
    "outcome unknown": "error",
}
_RISKS = frozenset({"read_only", "write", "ddl", "transaction"})
_APPROVAL_ENDS = frozenset({"approved", "denied", "expired", "superseded"})
# Refusals by class, from the guard's and the tools' wording: (words in the reason, class).
# First match wins; the order puts the narrow phrases before the broad ones.
REFUSAL_CLASSES: tuple[tuple[str, str], ...] = (
    ("writes on production", "production_write"),
    ("transaction control", "transaction_control"),
    ("no SQL statement", "empty"),
    ("outside quotes", "foreign_space"),
    ("executable comment", "executable_comment"),
    ("changes how the server reads", "changes_reading"),
    ("setting the statements", "changes_reading"),
    ("runs with", "checks_off"),
    ("commit implicitly", "implicit_commit"),
    ("could not be read", "reach_unknown"),
    ("may not see", "reach_unknown"),
    ("information_schema", "catalog"),
    ("beyond this database", "beyond_database"),
    ("outside", "outside_schema"),
    ("mixes DDL", "mixed_ddl_dml"),
    ("counted", "uncounted"),
)
_METHOD = re.compile(r"^[a-z]+(\.[A-Za-z]+){1,3}$")


@functools.lru_cache(maxsize=4096)
def _child(metric: Any, *labels: str) -> Any:
    """The labelled child of `metric` (labels are bounded: the cache stays small)."""
    return metric.labels(*labels)


def refusal_class(reason: str | None) -> str:
    """The bounded class of a refusal's wording ("other" when none fits)."""
    text = reason or ""
    return next((name for words, name in REFUSAL_CLASSES if words in text), "other")


# -- hooks -----------------------------------------------------------------------------------
def turn_ended(outcome: str, started: float) -> None:
    _child(TURNS, outcome).inc()
    TURN_SECONDS.observe(time.monotonic() - started)


def first_progress(seconds: float) -> None:
    FIRST_PROGRESS_SECONDS.observe(seconds)


def model_called(started: float, *, status: str | None, prompt: int, completion: int) -> None:
    """One model call: `status` None when it answered, else the HTTP status or the kind of
    failure (timeout, connection, unreadable)."""
    MODEL_SECONDS.observe(time.monotonic() - started)
    _child(MODEL_CALLS, "ok" if status is None else "error").inc()
    if status is not None:
        _child(MODEL_ERRORS, status).inc()
    if prompt:
        _child(MODEL_TOKENS, "prompt").inc(prompt)
    if completion:
        _child(MODEL_TOKENS, "completion").inc(completion)


def tool_called(tool: str, outcome: str, started: float) -> None:
    _child(TOOL_CALLS, tool, outcome).inc()
    _child(TOOL_SECONDS, tool).observe(time.monotonic() - started)


def statement_recorded(risk: str, outcome: str, error: str | None) -> None:
    """An audit record: a statement run, sent for approval, refused or failed."""
    decision = _DECISIONS.get(outcome)
    if decision is None:  # the end of an approval, not a statement
        return
    reason = refusal_class(error) if decision == "refused" else ""
    _child(STATEMENTS, risk if risk in _RISKS else "other", decision, reason).inc()
    if outcome == "rolled back":
        ROLLBACKS.inc()


def approval_decided(outcome: str) -> None:
    if outcome in _APPROVAL_ENDS:
        _child(APPROVALS_DECIDED, outcome).inc()


def pending_approvals(created: Iterable[float], now: float | None = None) -> None:
    """The approvals waiting now, by creation time (epoch seconds)."""
    times = list(created)
    at = time.time() if now is None else now
    APPROVALS_PENDING.set(len(times))
    APPROVALS_OLDEST.set(max(0.0, at - min(times)) if times else 0.0)


def statement_killed(reached: bool) -> None:
    _child(KILLS, "killed" if reached else "kill_failed").inc()


def slack_call(method: str, result: str) -> None:
    known = method == "upload" or _METHOD.match(method)
    _child(SLACK_CALLS, method if known else "other", result).inc()


def state_error(store: str) -> None:
    _child(STATE_ERRORS, store).inc()


def lease_taken() -> None:
    LEASES_HELD.inc()


def lease_given_back() -> None:
    LEASES_HELD.dec()
