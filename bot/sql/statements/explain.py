"""EXPLAIN, DESCRIBE and ANALYZE: a plan or a description is judged by the statement it
holds, or by the table it names."""

from __future__ import annotations

from bot.sql import statements
from bot.sql.lexical import Piece
from bot.sql.risk import Risk
from bot.sql.statements.admin import admin_statement
from bot.sql.statements.dml import PROCESSLIST_TABLE
from bot.sql.tokens import (
    STRING,
    Token,
    qualified_name,
    skip_words,
    tokenize,
)
from bot.sql.verdict import Verdict, read, unknown

_EXPLAINABLE = frozenset({"SELECT", "WITH", "TABLE", "VALUES", "INSERT", "REPLACE", "UPDATE"})
_EXPLAINABLE |= {"DELETE", "("}


def _explain_prefix(tokens: list[Token], index: int) -> tuple[int, list[str]]:
    """Skip EXPLAIN's options; return the index after them and the options seen."""
    seen: list[str] = []
    while index < len(tokens):
        word = tokens[index].word
        if word in ("ANALYZE", "EXTENDED", "PARTITIONS"):
            seen.append(word)
            index += 1
        elif word == "FORMAT" and index + 2 < len(tokens) and tokens[index + 1].word == "=":
            index += 3
        elif word == "INTO" and index + 1 < len(tokens):
            seen.append(word)
            index += 2
        elif (
            word == "FOR"
            and index + 2 < len(tokens)
            and tokens[index + 1].word in ("SCHEMA", "DATABASE")
        ):
            index += 3
        else:
            break
    return index, seen


def explain_statement(piece: Piece, first: str, depth: int) -> Verdict:
    tokens = tokenize(piece)
    index, seen = _explain_prefix(tokens, 1)
    if index >= len(tokens):
        return unknown(f"{first} without anything to explain")
    token = tokens[index]
    if token.word == "FOR" and index + 1 < len(tokens) and tokens[index + 1].word == "CONNECTION":
        # Another connection's plan and statement: what PROCESSLIST holds (the guard refuses).
        verdict = read(
            "EXPLAIN FOR CONNECTION", "EXPLAIN FOR CONNECTION shows another connection's plan"
        )
        verdict.add_reads([PROCESSLIST_TABLE])
        return verdict
    if token.word in _EXPLAINABLE:
        kind = "EXPLAIN ANALYZE" if "ANALYZE" in seen else "EXPLAIN"
        verdict = read(kind, "EXPLAIN shows a plan without running the statement")
        if "ANALYZE" in seen:
            verdict.at_least(Risk.WRITE, "EXPLAIN ANALYZE runs the statement to measure it")
        if "INTO" in seen:
            verdict.at_least(Risk.WRITE, "EXPLAIN … INTO @variable assigns a user variable")
        inner = statements.judge_text(piece.text[token.start :], depth + 1)
        if inner.risk is not Risk.READ_ONLY:
            verdict.at_least(
                inner.risk, "EXPLAIN is judged like the statement it explains (fail closed)"
            )
        verdict.absorb(inner, prefix="the explained statement: ")
        return verdict
    if not seen and _is_table_description(tokens, index):
        verdict = read("DESCRIBE", "DESCRIBE only reads a table's definition")
        name, _ = qualified_name(tokens, index)
        verdict.add_reads([name] if name else [])
        return verdict
    return unknown(f"{first} of something that is neither a table nor a statement")


def _is_table_description(tokens: list[Token], index: int) -> bool:
    """``t``, ``db.t``, ``t column`` or ``t 'pattern'`` and nothing else."""
    name, index = qualified_name(tokens, index)
    if name is None:
        return False
    if index < len(tokens) and (tokens[index].is_identifier or tokens[index].kind is STRING):
        index += 1
    return index == len(tokens)


def analyze_statement(piece: Piece, first: str, depth: int) -> Verdict:
    tokens = tokenize(piece)
    index = skip_words(tokens, 1, frozenset({"NO_WRITE_TO_BINLOG", "LOCAL"}))
    if index < len(tokens) and tokens[index].word in ("TABLE", "TABLES"):
        return admin_statement(piece, first, depth)
    index, _ = _explain_prefix(tokens, index)
    verdict = Verdict(Risk.WRITE, "ANALYZE", "ANALYZE <statement> runs the statement to measure it")
    if index >= len(tokens) or tokens[index].word not in _EXPLAINABLE:
        verdict.kind = "UNKNOWN"
        verdict.add_reason("ANALYZE of something that is neither a table nor a statement")
        return verdict
    verdict.absorb(
        statements.judge_text(piece.text[tokens[index].start :], depth + 1), "the statement: "
    )
    return verdict
