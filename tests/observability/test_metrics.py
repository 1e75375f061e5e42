"""The series' labels stay bounded: refusals by class, Slack methods by name, model failures by
status — never the SQL, the ids or the wording they came with."""

from __future__ import annotations

import pytest

from bot import guard
from bot.changes.execute import mixes_ddl_and_dml
from bot.observability import metrics
from bot.observability.observe import model_failure
from bot.sql.risk import classify

# (the reason as the guard words it, its class)
REFUSALS = [
    (guard.PRODUCTION_WRITE, "production_write"),
    (guard.TRANSACTION_CONTROL, "transaction_control"),
    (guard.NO_STATEMENT, "empty"),
    (guard.UNREAD_PROGRAMS, "reach_unknown"),
    (guard.HIDDEN_TRIGGERS.format(schema="shop"), "reach_unknown"),
    (guard.HIDDEN_KEYS.format(schema="shop"), "reach_unknown"),
    (guard.FOREIGN_SPACE.format(code="U+00A0"), "foreign_space"),
    (guard.HIDDEN_BY_COMMENT.format(number=1, kind="UPDATE"), "executable_comment"),
    (guard.REREAD.format(number=1, setting="sql_mode"), "changes_reading"),
    (guard.PROGRAM_SETTING.format(number=2, ways="sql_mode"), "changes_reading"),
    (guard.UNCHECKED.format(number=1, setting="foreign_key_checks"), "checks_off"),
    (guard.IMPLICIT_COMMIT.format(what="CALL p()"), "implicit_commit"),
    (guard.CHANGE_READS_CATALOG.format(number=1), "catalog"),
    (guard.CATALOG_VIA.format(view="TABLES", via="a view"), "catalog"),
    (
        "Blocked: the statement reads other.t, outside shop's schema shop; reads stay in …",
        "outside_schema",
    ),
    (
        "Blocked: the statement changes other.t, outside shop's own schema shop; changes …",
        "outside_schema",
    ),
    ("Blocked: something no rule names", "other"),
    (None, "other"),
]


@pytest.mark.parametrize(("reason", "expected"), REFUSALS, ids=[e for _, e in REFUSALS])
def test_a_refusal_is_labelled_by_its_class(reason: str | None, expected: str) -> None:
    assert metrics.refusal_class(reason) == expected


def test_mixing_ddl_and_dml_has_its_class() -> None:
    reason = mixes_ddl_and_dml(classify("UPDATE t SET a = 1; ALTER TABLE t ADD c INT"))
    assert reason is not None
    assert metrics.refusal_class(reason) == "mixed_ddl_dml"


def labelled(counter: object) -> set[tuple[str, ...]]:
    return {tuple(sample.labels.values()) for m in counter.collect() for sample in m.samples}  # type: ignore[attr-defined]


# (method as it reached the counter, the label kept)
SLACK_METHODS = [
    ("chat.postMessage", "chat.postMessage"),
    ("assistant.threads.setStatus", "assistant.threads.setStatus"),
    ("upload", "upload"),
    ("F0123ABC", "other"),  # a file id from an upload URL
    ("chat.postMessage?channel=C1", "other"),
    ("", "other"),
]


@pytest.mark.parametrize(
    ("method", "label"), SLACK_METHODS, ids=[m or "empty" for m, _ in SLACK_METHODS]
)
def test_slack_methods_are_kept_only_when_they_look_like_one(method: str, label: str) -> None:
    metrics.slack_call(method, "ok")
    kept = {method for method, _ in labelled(metrics.SLACK_CALLS)}
    assert label in kept
    assert method in kept or label == "other"


class StatusError(Exception):
    def __init__(self, status_code: int) -> None:
        self.status_code = status_code


class APITimeoutError(Exception):
    pass


class APIConnectionError(Exception):
    pass


def failed(cause: Exception) -> Exception:
    exc = Exception("the model could not be asked")
    exc.__cause__ = cause
    return exc


# (what the model client raised underneath, the status label)
MODEL_FAILURES = [
    (StatusError(429), "429"),
    (StatusError(503), "503"),
    (APITimeoutError(), "timeout"),
    (APIConnectionError(), "connection"),
    (ValueError("not JSON"), "unreadable"),
]


@pytest.mark.parametrize(("cause", "status"), MODEL_FAILURES, ids=[s for _, s in MODEL_FAILURES])
def test_a_failed_model_call_is_labelled_by_status(cause: Exception, status: str) -> None:
    assert model_failure(failed(cause)) == status


def test_statements_of_an_unknown_risk_and_approval_ends_stay_bounded() -> None:
    before = labelled(metrics.STATEMENTS)
    metrics.statement_recorded("SELECT * FROM secrets", "executed", None)
    metrics.statement_recorded("write", "denied", "denied by U0SOMEONE")
    added = labelled(metrics.STATEMENTS) - before
    assert added <= {("other", "run", "")}
