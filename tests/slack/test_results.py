"""The CSV file attached to a query result: every row, exactly, and safe to open."""

from __future__ import annotations

import csv
import io

from bot.agent.outcomes import QueryResult
from bot.slack.results import to_csv


def test_the_csv_holds_every_row_exactly() -> None:
    query_result = QueryResult(
        "db",
        "SELECT",
        ("id", "name", "note", "flag"),
        ((1, 'Ada, "the" first', None, True), (2, "line\nbreak", "ok", False)),
        False,
    )
    rows = list(csv.reader(io.StringIO(to_csv(query_result))))
    assert rows == [
        ["id", "name", "note", "flag"],
        ["1", 'Ada, "the" first', "", "true"],
        ["2", "line\nbreak", "ok", "false"],
    ]


def test_csv_cells_a_spreadsheet_would_run_get_an_apostrophe() -> None:
    query_result = QueryResult(
        "db", "SELECT", ("v",), (('=HYPERLINK("x")',), ("-5.25",), ("+cmd",), (-3,)), False
    )
    rows = list(csv.reader(io.StringIO(to_csv(query_result))))
    assert [row[0] for row in rows[1:]] == ['\'=HYPERLINK("x")', "-5.25", "'+cmd", "-3"]
