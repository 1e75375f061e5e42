"""A small token stream over a statement's masked text, for keyword-led statements.

Statements the parser adds nothing to (DDL, SET, admin commands, transaction control) are
judged from their leading keywords; their targets are read from these tokens.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from bot.sql.lexical import Piece
from bot.sql.risk import TableRef

WORD, QUOTED, STRING, VARIABLE, PUNCT = "word", "quoted", "string", "variable", "punct"

# Runs over masked text, where literal and identifier contents are blanks.
_TOKEN = re.compile(
    r"""
      (?P<word>[\w$\u0080-\U0010ffff]+)
    | (?P<quoted>`[^`]*`?|"[^"]*"?)
    | (?P<string>'[^']*'?)
    | (?P<variable>@@?(?:[\w$.\u0080-\U0010ffff]+|`[^`]*`?|'[^']*'?|"[^"]*"?)?)
    | (?P<punct>\S)
    """,
    re.X,
)


class Token(NamedTuple):
    kind: str
    word: str  # upper-cased word, or the punctuation character
    name: str  # as written (quoted identifiers unquoted, from the original text)
    start: int
    end: int

    @property
    def is_identifier(self) -> bool:
        return self.kind is WORD or self.kind is QUOTED

    @property
    def key(self) -> str:
        """The name a lookup compares, quoted or not: ``autocommit``, `` `autocommit` `` and
        (for option values like ENGINE='CONNECT') ``'autocommit'`` all give AUTOCOMMIT.
        Punctuation and variables give their upper-cased text."""
        if self.kind is QUOTED:
            return self.name.upper()
        if self.kind is STRING:
            return unquote(self.name).upper()
        return self.word


def tokenize(piece: Piece, limit: int | None = None) -> list[Token]:
    """The statement's tokens; only the first ``limit`` when that is all a caller reads."""
    tokens: list[Token] = []
    text = piece.text
    for match in _TOKEN.finditer(piece.masked):
        if limit is not None and len(tokens) >= limit:
            break
        kind = match.lastgroup or PUNCT
        start, end = match.span()
        if kind == WORD:
            written = text[start:end]
            tokens.append(Token(WORD, written.upper(), written, start, end))
        elif kind == QUOTED:
            tokens.append(Token(QUOTED, "", unquote(text[start:end]), start, end))
        elif kind == STRING:
            tokens.append(Token(STRING, "", text[start:end], start, end))
        elif kind == VARIABLE:
            written = text[start:end]
            tokens.append(Token(VARIABLE, written.upper(), written, start, end))
        else:
            tokens.append(Token(PUNCT, text[start], text[start], start, end))
    return tokens


def unquote(quoted: str) -> str:
    """`a``b` -> a`b; "a""b" -> a"b. Unterminated quotes are tolerated."""
    quote = quoted[0]
    body = quoted[1:-1] if len(quoted) > 1 and quoted.endswith(quote) else quoted[1:]
    return body.replace(quote * 2, quote)


def words(tokens: list[Token], start: int = 0, count: int = 3) -> list[str]:
    """The next ``count`` upper-cased words (or punctuation) from ``start``."""
    return [token.word for token in tokens[start : start + count]]


def qualified_name(tokens: list[Token], index: int) -> tuple[TableRef | None, int]:
    """Read ``name`` or ``schema.name`` at ``index``; return it and the index after it."""
    if index >= len(tokens) or not tokens[index].is_identifier:
        return None, index
    first = tokens[index]
    if (
        index + 2 < len(tokens)
        and tokens[index + 1].word == "."
        and (tokens[index + 2].is_identifier or tokens[index + 2].word == "*")
    ):
        return TableRef(first.name, tokens[index + 2].name), index + 3
    return TableRef(None, first.name), index + 1


def skip_words(tokens: list[Token], index: int, skippable: frozenset[str]) -> int:
    while index < len(tokens) and tokens[index].kind is WORD and tokens[index].word in skippable:
        index += 1
    return index


def name_list(tokens: list[Token], index: int) -> list[TableRef]:
    """``a, b.c, d`` at ``index``: every name, stopping at the first thing that is not one."""
    names: list[TableRef] = []
    while True:
        name, index = qualified_name(tokens, index)
        if name is None:
            return names
        names.append(name)
        if index < len(tokens) and tokens[index].word == ",":
            index += 1
            continue
        return names


def find_word(tokens: list[Token], word: str, start: int = 0) -> int:
    """Index of the first ``word`` outside parentheses from ``start``, or -1."""
    depth = 0
    for index in range(start, len(tokens)):
        token = tokens[index]
        if token.kind is PUNCT:
            if token.word == "(":
                depth += 1
            elif token.word == ")":
                depth -= 1
        elif depth == 0 and token.kind is WORD and token.word == word:
            return index
    return -1
