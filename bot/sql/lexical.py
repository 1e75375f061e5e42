"""Lexing SQL text the way a MySQL/MariaDB server does, for splitting and lexical checks.

One regex pass finds what matters to the boundaries of statements: string literals ('…',
"…", with backslash and doubled-quote escapes), quoted identifiers (`…`), comments
(``-- `` to end of line, ``#`` to end of line, ``/* … */``) and semicolons. Everything else is
code and is skipped over in C. Each statement comes out with

- ``text``: its exact source, whitespace trimmed, so ``sql[start:end] == text``;
- ``code``: the same text with every comment blanked to spaces — what the parser reads, so
  that the parser's own comment rules (which differ from the server's) never matter;
- ``masked``: ``code`` with the insides of literals and quoted identifiers blanked too — what
  the keyword checks read, so that ``'DROP TABLE t'`` or `` `drop` `` is never a keyword.

All three have the same length, so an offset in one is an offset in the others.

Server rules followed, because getting them wrong would hide code from the checks:
``--`` starts a comment only when followed by whitespace or a control character (``1--1`` is
arithmetic); ``#`` always starts one; block comments do not nest; an unterminated literal or
comment is reported as a problem rather than guessed at.

Two spots where the server's reading depends on its settings are reported as problems
rather than resolved: a backslash-escaped quote inside a literal (``'it\\'s'``) ends the
literal early under ``sql_mode=NO_BACKSLASH_ESCAPES`` (and ``"a\\"b"`` under ANSI_QUOTES), so
the rest of the statement would be read differently.
"""

from __future__ import annotations

import re
from typing import NamedTuple

# The server's whitespace between tokens: ASCII space, tab, LF, CR, FF and VT. Nothing else —
# a no-break space (U+00A0) or any other Unicode space is part of a name, so
# ``DROP TABLE x<U+00A0>`` drops a different table than ``DROP TABLE x``. str.strip() would
# remove those too, which is why every trim of SQL text goes through trim_sql.
SQL_WHITESPACE = " \t\n\r\f\v"

# Possessive quantifiers keep this linear on any input. Each opener's closing group is
# optional so that an unterminated literal or comment runs to the end and can be reported.
_SPECIAL = re.compile(
    r"""
      '(?:[^'\\]++|\\.|'')*+(?P<sq>')?
    | "(?:[^"\\]++|\\.|"")*+(?P<dq>")?
    | `(?:[^`]++|``)*+(?P<bq>`)?
    | /\*(?:[^*]++|\*(?!/))*+(?P<bc>\*/)?
    | (?:--(?=[\x00-\x20\x7f]|\Z)|\#)[^\n]*+
    | ;
    """,
    re.S | re.X,
)

_ESCAPE = re.compile(r"\\.", re.S)

# The server runs the content of /*! … */, /*!50700 … */, /*M! … */ and /*M!100100 … */.
_EXECUTABLE_OPENER = re.compile(r"/\*[Mm]?!\d*")

# For unwrapping executable comments: the content is lexed as code, so literals inside it
# may contain "*/" without closing it.
_UNWRAP = re.compile(
    r"""
      (?P<open>/\*[Mm]?!\d*)
    | (?P<close>\*/)
    | '(?:[^'\\]++|\\.|'')*+'?
    | "(?:[^"\\]++|\\.|"")*+"?
    | `(?:[^`]++|``)*+`?
    | /\*(?:[^*]++|\*(?!/))*+(?:\*/)?
    | (?:--(?=[\x00-\x20\x7f]|\Z)|\#)[^\n]*+
    """,
    re.S | re.X,
)


class Piece(NamedTuple):  # a NamedTuple: immutable, and cheap to build on the hot path
    """One statement as the lexer sees it; see the module docstring for the three texts."""

    start: int
    end: int
    text: str
    code: str
    masked: str
    executable_comment: bool
    problems: tuple[str, ...]


def split(sql: str) -> list[Piece]:
    """Split ``sql`` into statements at semicolons that are code, dropping empty ones.

    A statement made only of whitespace and ordinary comments is empty; one holding an
    executable comment is not, since the server runs that comment.
    """
    pieces: list[Piece] = []
    segment_start = 0
    specials: list[re.Match[str]] = []
    for match in _SPECIAL.finditer(sql):
        if sql[match.start()] == ";":
            _emit(sql, segment_start, match.start(), specials, pieces)
            segment_start = match.end()
            specials = []
        else:
            specials.append(match)
    _emit(sql, segment_start, len(sql), specials, pieces)
    return pieces


def trim_sql(sql: str) -> str:
    """``sql`` without the server's whitespace at either end (never Unicode spaces)."""
    return sql.strip(SQL_WHITESPACE)


def statement_texts(sql: str) -> list[str]:
    """The statements of ``sql``, each exactly as it must reach the server: cut at semicolons
    that are code, trimmed of the server's whitespace only, empty ones dropped. The
    classifier's Statement.text is the same string, so what runs is what was judged."""
    return [piece.text for piece in split(sql)]


def statement_text(sql: str) -> str:
    """One statement exactly as it must reach the server: the text the classifier judged
    (``Statement.text``) — trimmed of the server's whitespace only, without its separating
    ";". Text with no statement gives "". Text holding several is only trimmed and stays
    whole, so the server refuses it (connections never enable multi-statements) instead of
    the bot running a cut nobody judged."""
    pieces = split(sql)
    if len(pieces) == 1:
        return pieces[0].text
    return trim_sql(sql) if pieces else ""


# Characters the parser (Python's str.isspace) takes for whitespace but the server reads as
# part of a name: ``home<U+00A0>.t`` is table t of database "home<U+00A0>" on the server, and
# "home".t to sqlglot. Every such character is at most U+3000.
_FOREIGN_SPACES = "".join(
    char for char in map(chr, range(0x3001)) if char.isspace() and char not in SQL_WHITESPACE
)
_FOREIGN_SPACE = re.compile("[" + re.escape(_FOREIGN_SPACES) + "]")


def foreign_space(piece: Piece) -> str | None:
    """The first character of ``piece``'s code (or, with an executable comment, anywhere in
    it) that the parser would skip as whitespace while the server keeps it in a name."""
    found = _FOREIGN_SPACE.search(piece.text if piece.executable_comment else piece.masked)
    return found.group() if found else None


# 0x41 is a number in a numeric context on MariaDB; sqlglot writes it back as x'41', a
# string, which compares with a number as 0. SQL built from a parse of such a statement
# (the card's count and preview, the before-image for Undo) would pick other rows.
_HEX_NUMBER = re.compile(r"(?<![\w$@.])0x[0-9A-Fa-f]+(?![\w$])")


_HEX_REWRITTEN = "a 0x… number changes meaning when the statement is rewritten (as x'…')"


def rewrite_problem(piece: Piece) -> str:
    """Why SQL rebuilt from the parse of one statement would not mean what it means, or ""."""
    return _HEX_REWRITTEN if _HEX_NUMBER.search(piece.masked) else ""


def rewritten_differently(sql: str) -> str:
    """Why SQL rebuilt from the parse of ``sql`` would not mean what ``sql`` means, or ""."""
    for piece in split(sql):
        problem = rewrite_problem(piece)
        if problem:
            return problem
    return ""


def may_hold_foreign_space(sql: str) -> bool:
    """Whether ``sql`` holds any character `foreign_space` looks for (one search, no cut)."""
    return _FOREIGN_SPACE.search(sql) is not None


def first_foreign_space(sql: str) -> str | None:
    """`foreign_space` of the first statement of ``sql`` that holds one."""
    if not may_hold_foreign_space(sql):
        return None  # the common case, without splitting
    for piece in split(sql):
        space = foreign_space(piece)
        if space is not None:
            return space
    return None


def has_executable_comment(sql: str) -> bool:
    """Whether ``sql`` holds a ``/*! … */`` or ``/*M! … */`` comment the server may run."""
    return any(piece.executable_comment for piece in split(sql))


def unwrap_executable_comments(text: str) -> str:
    """Return ``text`` with the markers of executable comments blanked, keeping their content.

    The result has the same length as ``text``; it is what a server that honours the
    comments executes.
    """
    blanks: list[tuple[int, int]] = []
    depth = 0
    for match in _UNWRAP.finditer(text):
        if match.group("open") is not None:
            depth += 1
            blanks.append(match.span())
        elif match.group("close") is not None and depth:
            depth -= 1
            blanks.append(match.span())
    return _blank(text, blanks)


def _blank(text: str, spans: list[tuple[int, int]]) -> str:
    parts: list[str] = []
    position = 0
    for start, end in spans:
        parts.append(text[position:start])
        parts.append(" " * (end - start))
        position = end
    parts.append(text[position:])
    return "".join(parts)


def _emit(
    sql: str, start: int, end: int, specials: list[re.Match[str]], pieces: list[Piece]
) -> None:
    raw = sql[start:end]
    stripped = raw.lstrip(SQL_WHITESPACE)
    start += len(raw) - len(stripped)
    end = start + len(stripped.rstrip(SQL_WHITESPACE))
    if start >= end:
        return
    text = sql[start:end]
    if not specials:
        pieces.append(Piece(start, end, text, text, text, False, ()))
        return
    code_parts: list[str] = []
    masked_parts: list[str] = []
    problems: list[str] = []
    executable = commented = False
    position = start
    for match in specials:
        token_start, token_end = match.start(), min(match.end(), end)  # trailing blanks
        gap = sql[position:token_start]
        code_parts.append(gap)
        masked_parts.append(gap)
        position = token_end
        opener = sql[token_start]
        length = token_end - token_start
        if opener in "'\"`":
            code_parts.append(sql[token_start:token_end])
            if match.group(_CLOSING_GROUP[opener]) is not None:
                masked_parts.append(opener + " " * (length - 2) + opener)
            else:
                masked_parts.append(opener + " " * (length - 1))
                problems.append(_UNTERMINATED[opener])
            if (
                opener != "`"
                and "\\" in sql[token_start:token_end]
                and _has_escaped_quote(sql[token_start + 1 : token_end], opener)
            ):
                problems.append(
                    "a literal uses a backslash-escaped quote, which ends the literal early "
                    "when the server runs with NO_BACKSLASH_ESCAPES or ANSI_QUOTES; double "
                    "the quote instead ('it''s')"
                )
        else:
            commented = True
            blank = " " * length
            code_parts.append(blank)
            masked_parts.append(blank)
            if opener == "/":
                if match.group("bc") is None:
                    problems.append("a /* comment is never closed")
                if _EXECUTABLE_OPENER.match(sql, token_start):
                    executable = True
    tail = sql[position:end]
    code_parts.append(tail)
    masked_parts.append(tail)
    code = "".join(code_parts) if commented else text
    if code.isspace() and not executable and not problems:
        return
    pieces.append(Piece(start, end, text, code, "".join(masked_parts), executable, tuple(problems)))


_CLOSING_GROUP = {"'": "sq", '"': "dq", "`": "bq"}
_UNTERMINATED = {
    "'": "a '…' literal is never closed",
    '"': 'a "…" literal is never closed',
    "`": "a `…` identifier is never closed",
}


def upper_masked(piece: Piece) -> str:
    """``piece.masked`` in upper case, character for character: an offset in it is an offset
    in the statement. (``str.upper`` turns "ß" into "SS", which would shift every later
    offset; such characters are left as they are.)"""
    upper = piece.masked.upper()
    if len(upper) == len(piece.masked):
        return upper
    return "".join(char if len(high := char.upper()) != 1 else high for char in piece.masked)


def _has_escaped_quote(body: str, quote: str) -> bool:
    """True when a backslash escape in a literal's body escapes the literal's own quote."""
    return any(escape.group()[1] == quote for escape in _ESCAPE.finditer(body))
