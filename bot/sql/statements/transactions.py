"""Transaction control (BEGIN, COMMIT, ROLLBACK, SAVEPOINT, XA) and table locks."""

from __future__ import annotations

from bot.sql.lexical import Piece
from bot.sql.risk import Risk, TableRef
from bot.sql.statements.admin import admin_statement
from bot.sql.tokens import (
    Token,
    find_word,
    qualified_name,
    tokenize,
)
from bot.sql.verdict import Verdict, unknown


def transaction_statement(piece: Piece, first: str, depth: int) -> Verdict:
    tokens = tokenize(piece)
    second = tokens[1].word if len(tokens) > 1 else ""
    if first == "START" and second != "TRANSACTION":
        return admin_statement(piece, first, depth)
    if first in ("LOCK", "UNLOCK") and second not in ("TABLE", "TABLES"):
        return admin_statement(piece, first, depth)
    if first == "RELEASE" and second != "SAVEPOINT":
        return unknown("RELEASE without SAVEPOINT is not a statement the classifier knows")
    kind, reason = _TRANSACTIONS[first]
    if first == "START":
        if find_word(tokens, "ONLY") >= 0:
            reason += "; even READ ONLY, it holds a snapshot across statements"
    elif first == "ROLLBACK" and find_word(tokens, "TO") >= 0:
        kind, reason = "ROLLBACK TO SAVEPOINT", "ROLLBACK TO SAVEPOINT undoes part of a transaction"
    elif first == "BEGIN" and second == "NOT":
        kind, reason = "BEGIN NOT ATOMIC", "BEGIN NOT ATOMIC runs a compound block of statements"
    elif first == "XA" and second:
        kind = f"XA {second}"
    verdict = Verdict(Risk.TRANSACTION, kind, reason)
    if first == "LOCK":
        verdict.add_targets(_lock_targets(tokens))
    return verdict


_TRANSACTIONS = {
    "BEGIN": ("BEGIN", "BEGIN opens a transaction that holds locks across statements"),
    "START": (
        "START TRANSACTION",
        "START TRANSACTION opens a transaction that holds locks across statements",
    ),
    "COMMIT": ("COMMIT", "COMMIT ends a transaction, making its changes permanent"),
    "ROLLBACK": ("ROLLBACK", "ROLLBACK ends a transaction, undoing its changes"),
    "SAVEPOINT": ("SAVEPOINT", "SAVEPOINT marks a point inside a transaction"),
    "RELEASE": ("RELEASE SAVEPOINT", "RELEASE SAVEPOINT drops a savepoint of a transaction"),
    "XA": ("XA", "XA controls a distributed (two-phase) transaction"),
    "LOCK": (
        "LOCK TABLES",
        "LOCK TABLES holds table locks for the rest of the session and commits any open "
        "transaction",
    ),
    "UNLOCK": ("UNLOCK TABLES", "UNLOCK TABLES releases table locks and commits"),
}


def _lock_targets(tokens: list[Token]) -> list[TableRef]:
    """LOCK TABLES a READ, b.c AS x WRITE: the names after TABLES and after each comma."""
    names: list[TableRef] = []
    expect_name = True
    for index in range(2, len(tokens)):
        if expect_name:
            name, _ = qualified_name(tokens, index)
            if name:
                names.append(name)
            expect_name = False
        elif tokens[index].word == ",":
            expect_name = True
    return names
