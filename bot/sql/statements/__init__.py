"""Judging one statement, dispatched on its leading keyword.

Queries (SELECT, WITH, TABLE, VALUES, "(") go to bot.sql.queries; UPDATE and DELETE are
parsed for their targets; everything else is judged from its leading keywords,
because the parser adds nothing there: it falls back to an opaque Command for most admin
and DDL statements, and silently misreads some (``START SLAVE`` as a transaction,
``SHUTDOWN`` as a column, ``FLUSH PRIVILEGES`` as an alias). A leading keyword that is not
in these tables makes the statement UNKNOWN, which is not read-only.

By family: dml (queries, SHOW, INSERT/REPLACE/UPDATE/DELETE), explain (EXPLAIN, DESCRIBE,
ANALYZE), ddl and programs (CREATE/ALTER/DROP/…, and what they reach), settings (SET),
transactions, admin (everything else); dispatch picks one by the leading keyword, and
words holds the keyword sets more than one family reads.
"""

from bot.sql.statements.admin import texts_it_runs
from bot.sql.statements.dispatch import judge, judge_text
from bot.sql.statements.programs import unbounded_body
from bot.sql.statements.settings import changes_how_sql_is_read, hides_itself, switches_checks

__all__ = [
    "changes_how_sql_is_read",
    "hides_itself",
    "judge",
    "judge_text",
    "switches_checks",
    "texts_it_runs",
    "unbounded_body",
]
