"""Judging one statement: dispatched on its leading keyword to its family's module, with
what every statement shares (executable comments, lexical problems, the routines it calls)."""

from __future__ import annotations

import re
from collections.abc import Callable

from bot.sql.lexical import Piece, split, unwrap_executable_comments
from bot.sql.queries import (
    named_reads,
    reach,
)
from bot.sql.risk import Risk
from bot.sql.statements.admin import ADMIN_REASONS, admin_statement
from bot.sql.statements.ddl import ddl_statement
from bot.sql.statements.dml import dml_statement, query_statement, show_statement
from bot.sql.statements.explain import analyze_statement, explain_statement
from bot.sql.statements.programs import PROGRAMS
from bot.sql.statements.settings import set_statement
from bot.sql.statements.transactions import transaction_statement
from bot.sql.statements.words import CALLED_NAME
from bot.sql.tokens import (
    qualified_name,
    tokenize,
)
from bot.sql.verdict import Verdict, unknown

_MAX_DEPTH = 4  # EXPLAIN, PREPARE and executable comments nest judgements; enough is enough
_FIRST_WORD = re.compile(r"\s*(\(|[^\W\d][\w$]*)")


def judge(piece: Piece, depth: int = 0) -> Verdict:
    """The verdict on one statement, executable comments and lexical problems included."""
    if depth > _MAX_DEPTH:
        return unknown("statements nested too deeply to judge (EXPLAIN/PREPARE/comments)")
    verdict = None if piece.code.isspace() else _judge_code(piece, depth)
    if piece.executable_comment:
        inside = judge_text(unwrap_executable_comments(piece.text), depth + 1)
        if verdict is None:
            verdict = Verdict(Risk.WRITE, inside.kind)
        verdict.at_least(
            Risk.WRITE,
            "it contains an executable comment (/*! … */ or /*M! … */) whose content the "
            "server runs",
        )
        verdict.absorb(inside, prefix="inside the executable comment: ")
    if verdict is None:  # only comments, kept because one of them is never closed
        verdict = unknown("it holds nothing but comments")
    for problem in piece.problems:
        if "never closed" in problem:
            verdict.kind = "UNKNOWN"
        verdict.at_least(Risk.WRITE, problem)
    return verdict


def judge_text(text: str, depth: int) -> Verdict:
    """Judge text that may hold several statements; the highest risk wins."""
    pieces = split(text)
    if not pieces:
        return unknown("no statement found where one was expected")
    verdict = judge(pieces[0], depth)
    for piece in pieces[1:]:
        verdict.absorb(judge(piece, depth))
    return verdict


def _judge_code(piece: Piece, depth: int) -> Verdict:
    match = _FIRST_WORD.match(piece.masked)
    if match is None:
        return unknown("it does not start with a SQL keyword; not read-only")
    first = match.group(1).upper()
    handler = _HANDLERS.get(first)
    if handler is None:
        if first == "DELIMITER":
            return unknown("DELIMITER is a mysql client command, not SQL")
        return unknown(f"{first} is not a statement the classifier knows; not read-only")
    verdict = handler(piece, first, depth)
    verdict.add_reads(named_reads(piece))  # LASTVAL(other.s): a name is a read target
    if verdict.risk is not Risk.READ_ONLY and handler not in _JUDGE_THEIR_OWN_REACH:
        # Routines called by a qualified name, sequences advanced, server files: a write
        # reaches these too, and reads what its subqueries read (queries, DML and EXPLAIN
        # report those themselves, as do stored programs and views for their bodies).
        reach(
            piece,
            verdict,
            reads=verdict.kind not in _KINDS_WITH_OWN_READS,
            calls=first in _CALLING_STATEMENTS,
            not_calls=CALLED_NAME if first != "CALL" else _procedure_name(piece),
        )
    return verdict


# Statements whose "name (" is a call of a stored function (or, for CALL, the procedure);
# elsewhere (DDL, admin) it is mostly a table, a column type or an index list. DML does its
# own (see dml_statement).
_CALLING_STATEMENTS = frozenset({"SET", "DO", "CALL", "EXECUTE"})


def _procedure_name(piece: Piece) -> frozenset[int]:
    """CALL p(…): the procedure's own name is the call itself, not a stored function."""
    tokens = tokenize(piece, limit=6)
    name, after = qualified_name(tokens, 1)
    return CALLED_NAME | ({tokens[after - 1].start} if name is not None else set())


_Handler = Callable[[Piece, str, int], Verdict]

# Queries, SHOW and DML report their calls, targets and reads themselves.
_JUDGE_THEIR_OWN_REACH: frozenset[_Handler] = frozenset(
    {query_statement, show_statement, dml_statement}
)
# Statements whose reads come from their own parse or from the statement they hold.
_KINDS_WITH_OWN_READS = frozenset(
    {"INSERT", "REPLACE", "UPDATE", "DELETE", "EXPLAIN", "EXPLAIN ANALYZE", "ANALYZE"}
    | {"DESCRIBE", "SET STATEMENT", "PREPARE", "EXECUTE IMMEDIATE"}
    | {f"{verb} {obj}" for verb in ("CREATE", "ALTER") for obj in PROGRAMS | {"VIEW"}}
)

_HANDLERS: dict[str, _Handler] = {
    **dict.fromkeys(("SELECT", "WITH", "(", "TABLE", "VALUES"), query_statement),
    "SHOW": show_statement,
    **dict.fromkeys(("DESCRIBE", "DESC", "EXPLAIN"), explain_statement),
    "ANALYZE": analyze_statement,
    **dict.fromkeys(("INSERT", "REPLACE", "UPDATE", "DELETE"), dml_statement),
    **dict.fromkeys(
        ("CREATE", "ALTER", "DROP", "RENAME", "TRUNCATE", "GRANT", "REVOKE"), ddl_statement
    ),
    "SET": set_statement,
    **dict.fromkeys(
        ("BEGIN", "START", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE", "XA", "LOCK", "UNLOCK"),
        transaction_statement,
    ),
    **dict.fromkeys(
        (name for name in ADMIN_REASONS if name not in ("START", "LOCK", "UNLOCK", "ANALYZE")),
        admin_statement,
    ),
}
