"""Read-only candidates: SELECT, WITH, TABLE, VALUES, parenthesised queries, and SHOW.

A query is read-only when nothing in it does more than read. In MySQL's grammar a SELECT
can act only through a few keyword-led clauses (INTO, FOR UPDATE/SHARE, LOCK IN SHARE MODE,
PROCEDURE, := assignments, NEXT VALUE FOR) and through the functions it calls. The lexical
scan looks for all of those in the masked text, where literals, quoted identifiers and
comments can no longer pose as keywords; it is a superset of what the parse tree would show
(a lock or an INTO in the tree always comes from one of these words), so the tree is not
walked again for them.

Calls: every ``name (`` in the code is a call unless the name is a known built-in written
the way MariaDB resolves to the built-in, or a keyword (functions.py says which spellings
those are). The only ``name (`` that is not a call although the name is neither is a CTE or
derived-table name with a column list (``WITH c (n) AS …``); the parse tree settles those by
position — the name must stand exactly where the tree has such a name. A table, alias or
CTE elsewhere that happens to share a called function's name excuses nothing
(``SELECT evil() FROM t AS evil`` calls the stored function evil).

The parser (sqlglot, MySQL dialect) is the second opinion: the statement must parse, as a
query — or, after WITH, as the INSERT/UPDATE/DELETE of a writable CTE. Anything it cannot
read is UNKNOWN and not read-only.
"""

from __future__ import annotations

import re
import string
import threading
from typing import NamedTuple

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect

from bot.sql.functions import (
    CONTEXT_KEYWORDS,
    NEVER_STORED,
    PAREN_KEYWORDS,
    SAFE_FUNCTIONS,
    SERVER_NAME_FUNCTIONS,
    SIDE_EFFECT_FUNCTIONS,
)
from bot.sql.lexical import Piece, upper_masked
from bot.sql.risk import Risk, TableRef
from bot.sql.targets import dml_targets, qualified_names, query_reads, read_tables
from bot.sql.tokens import tokenize, unquote
from bot.sql.verdict import SERVER, Verdict, read, unknown

_MYSQL = Dialect.get_or_raise("mysql")
_WHITESPACE = " \t\n\r\f\v"
_ASCII_WORD = string.ascii_letters + string.digits + "_$"

_HARMLESS_BEFORE_PAREN = SAFE_FUNCTIONS | PAREN_KEYWORDS

# Cheap substring test before the regex: most queries contain none of these.
_DANGER_HINTS = (
    "INTO",
    "UPDATE",
    "DELETE",
    "INSERT",
    "REPLACE",
    "SHARE",
    "NEXT",
    "SETVAL",
    "PROCEDURE",
    ":=",
    "NOWAIT",
    "LOCKED",
)

# Read over upper-cased masked text.
_DANGER = re.compile(
    r"""
      (?P<lock>\bFOR\s+(?:NO\s+KEY\s+)?UPDATE\b|\bFOR\s+(?:KEY\s+)?SHARE\b
              |\bLOCK\s+IN\s+SHARE\s+MODE\b|\bNOWAIT\b|\bSKIP\s+LOCKED\b)
    | (?P<into>\bINTO\b)
    | (?P<dml>\b(?:UPDATE|DELETE|INSERT|REPLACE)\b)
    | (?P<next>\bNEXT\s+VALUE\s+FOR\b)
    | (?P<sequence>\b(?:NEXTVAL|SETVAL)\b)
    | (?P<procedure>\bPROCEDURE\b)
    | (?P<assign>:=)
    """,
    re.X,
)
_FOLLOWING_WORD = re.compile(r"\s*(@|\w+)")
_NAME = re.compile(
    r"\s*(`[^`]*`|[\w$\u0080-\U0010ffff]+)(?:\s*\.\s*(`[^`]*`|[\w$\u0080-\U0010ffff]+))?"
)
_PREVIOUS_VALUE = re.compile(r"\bPREVIOUS\s+VALUE\s+FOR\b")
# What takes a sequence's name: LASTVAL(s), NEXTVAL(s), SETVAL(s, …), PREVIOUS|NEXT VALUE FOR
# s, s.nextval and s.currval. Read over the masked text, any case.
_SEQUENCE_NAME = re.compile(
    r"\b(?:LASTVAL|NEXTVAL|SETVAL)\s*(?P<paren>\()"
    r"|\b(?:PREVIOUS|NEXT)\s+VALUE\s+FOR\b"
    r"|\.\s*(?P<suffix>NEXTVAL|CURRVAL)\b(?!\s*\()"
    r"|\b(?P<server>IS_FREE_LOCK|IS_USED_LOCK|BINLOG_GTID_POS)\s*\(",
    re.I,
)
# DUMPFILE is not reserved: it names a file only when a literal follows (INSERT INTO dumpfile).
_FILE_LITERAL = re.compile(r"\s*(?:_\w+\s*)?['\"]")
# Inside JSON_TABLE( … ): the row path literal and its COLUMNS clause.
_COLUMNS_CLAUSE = re.compile(r"'\s*COLUMNS\s*\(")

_INTO_REASONS = {
    "OUTFILE": "SELECT … INTO OUTFILE writes a file on the database server",
    "DUMPFILE": "SELECT … INTO DUMPFILE writes a file on the database server",
    "@": "SELECT … INTO @variable assigns user variables (session state)",
}
_QUERY_KINDS = {"SELECT": "SELECT", "(": "SELECT", "WITH": "SELECT", "TABLE": "TABLE"}
_DML_KINDS = {exp.Insert: "INSERT", exp.Update: "UPDATE", exp.Delete: "DELETE"}
_QUERY_ROOTS = (exp.Query, exp.Values)


class _ParserPerThread(threading.local):
    """sqlglot's tokenizer and parser, built once per thread and reused: both reset their
    state at every call, and building them costs more than parsing a short statement."""

    def __init__(self) -> None:
        self.tokenizer = _MYSQL.tokenizer()
        self.parser = _MYSQL.parser()


_SQLGLOT = _ParserPerThread()


def parse(code: str) -> tuple[exp.Expression | None, str]:
    """Parse one statement; (tree, "") or (None, why not). Never raises: a parser failure of
    any kind (including recursion limits on absurd nesting) means "cannot read it"."""
    sqlglot = _SQLGLOT
    try:
        parsed = sqlglot.parser.parse(sqlglot.tokenizer.tokenize(code), code)
        # Every node class sqlglot builds is an Expression (Expr alone is its traits' base).
        trees = [tree for tree in parsed if isinstance(tree, exp.Expression)]
    except Exception as error:  # fail closed on any parser failure
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else ""
        return None, f"{type(error).__name__}: {first_line.split(' <Token')[0]}"[:160]
    if len(trees) != 1:
        return None, f"it reads as {len(trees)} statements"
    return trees[0], ""


def judge_query(piece: Piece, first: str) -> Verdict:
    kind = _QUERY_KINDS.get(first, first)
    verdict = read(kind, f"{kind} only reads data")
    upper = upper_masked(piece)
    found = _scan_keywords(piece, upper, verdict, first=first)
    calls = _scan_calls(piece, upper)
    tree, error = parse(_parser_text(piece, upper))
    if tree is None or not (
        isinstance(tree, _QUERY_ROOTS) or (first == "WITH" and type(tree) in _DML_KINDS)
    ):
        # Unreadable: not read-only, and every call and lock counts (nothing can excuse a
        # call, and a lock's tables are every qualified name in it — a superset).
        why = (
            f"the parser cannot read it as a query ({error}); not read-only"
            if tree is None
            else f"the parser reads it as {type(tree).__name__}, not as a query"
        )
        if verdict.risk is Risk.READ_ONLY:
            verdict = unknown(why)
        _apply_calls(verdict, calls, set())
        if "lock" in found:
            verdict.add_targets(qualified_names(tokenize(piece)))
        verdict.add_reads([SERVER])  # what an unreadable query reads cannot be bounded
        return verdict
    verdict.add_reads(query_reads(tree, upper))
    dml_kind = _DML_KINDS.get(type(tree))
    if dml_kind is not None:
        verdict.kind = dml_kind
        verdict.at_least(Risk.WRITE, f"WITH … {dml_kind} changes rows (a writable CTE)")
        verdict.add_targets(dml_targets(tree))
    if calls:
        _apply_calls(verdict, calls, _column_list_names(tree))
    if "lock" in found:
        verdict.add_targets(read_tables(tree))
    return verdict


def _apply_calls(verdict: Verdict, calls: list[_Call], not_calls: set[int]) -> None:
    for call in calls:
        if call.start not in not_calls:
            verdict.at_least(Risk.WRITE, call.reason)
            verdict.add_targets(call.targets)
            if call.routine is not None:
                verdict.add_calls([call.routine])


def judge_show(piece: Piece) -> Verdict:
    verdict = read("SHOW", "SHOW only reads metadata")
    upper = upper_masked(piece)
    _scan_keywords(piece, upper, verdict, first="SHOW")
    _apply_calls(verdict, _scan_calls(piece, upper), set())
    return verdict


def reach_targets(piece: Piece) -> list[TableRef]:
    """For a statement that is not a query: what it reaches besides its own targets —
    routines it calls by a qualified name (``other.f()``), sequences it advances
    (``NEXTVAL(other.s)``, ``NEXT VALUE FOR other.s``) and the server's file system
    (``LOAD_FILE``, ``INTO OUTFILE``). Its own risk is judged elsewhere."""
    scratch = Verdict(Risk.WRITE, "")
    reach(piece, scratch)
    return scratch.targets


def reach(
    piece: Piece,
    verdict: Verdict,
    *,
    reads: bool = True,
    calls: bool = True,
    not_calls: frozenset[int] = frozenset(),
) -> None:
    """For a statement that is not a query: add what it reaches besides its own targets
    (see reach_targets) to ``verdict``'s targets, the stored functions it calls to its calls,
    and the tables its subqueries read to its reads. Its own risk is judged elsewhere.
    ``calls=False`` where ``name (`` is mostly a table, column type or index list rather
    than a call (DDL, admin statements; a stored program's body reports its calls itself);
    ``not_calls`` holds the offsets of names that stand before "(" without being called
    (``INSERT INTO t (a)``, ``CALL p(…)``'s own name, ``DO (…)``)."""
    upper = upper_masked(piece)
    scratch = Verdict(Risk.WRITE, "")
    _scan_keywords(piece, upper, scratch, first="")
    verdict.add_targets(scratch.targets)
    if "(" in upper:
        for call in _scan_calls(piece, upper):
            verdict.add_targets(call.targets)
            if calls and call.routine is not None and call.start not in not_calls:
                verdict.add_calls([call.routine])
    if reads and "SELECT" in upper:
        verdict.add_reads(subquery_reads(piece, upper))


# Where a query starts inside another statement: SELECT anywhere; WITH, TABLE and VALUES
# only right after "(" (elsewhere they are clauses: WITH CHECK OPTION, CREATE TABLE, …).
_QUERY_START = re.compile(r"\(\s*(?:WITH|TABLE|VALUES|SELECT)\b|\bSELECT\b")


def subquery_reads(piece: Piece, upper: str) -> list[TableRef]:
    """Tables read by the queries inside a statement that is not itself a query (SET @a =
    (SELECT …), DO, CALL p((SELECT …)), INSERT … SELECT, CREATE TABLE … SELECT, SHOW …
    WHERE). A query in parentheses runs to its ")"; one without runs to the end of the
    statement. A query that does not parse reads the whole server (fail closed)."""
    reads: dict[TableRef, None] = {}
    parens: _Parens | None = None
    covered = -1  # queries inside one already parsed are in its tree
    for match in _QUERY_START.finditer(upper):
        start = match.start()
        if start < covered or _follows_dot(upper, start):
            continue
        if upper[start] == "(":
            parens = parens or _Parens(piece.masked)
            end = parens.close_of.get(start, len(upper))
            start += 1
        else:
            end = len(upper)
        tree, _ = parse(piece.code[start:end])
        if isinstance(tree, _QUERY_ROOTS):
            reads.update(dict.fromkeys(query_reads(tree)))
        else:
            reads[SERVER] = None
        covered = end
    return list(reads)


def _column_list_names(tree: exp.Expression) -> set[int]:
    """Start offsets of the CTE and derived-table names that carry a column list
    (``WITH c (n) AS``, ``AS d (x)``): the one place where ``name (`` is not a call."""
    starts: set[int] = set()
    for alias in tree.find_all(exp.TableAlias):
        name = alias.this
        if alias.args.get("columns") and isinstance(name, exp.Identifier):
            start = name.meta.get("start")
            if isinstance(start, int):
                starts.add(start)
    return starts


def _unknown_function(name: str) -> str:
    return (
        f"calls {name}(), which is not a known built-in function; "
        "stored and loadable functions can change data"
    )


def _scan_keywords(piece: Piece, upper: str, verdict: Verdict, *, first: str) -> set[str]:
    """Find the clauses that make a query act; record reasons; return the kinds found."""
    found: set[str] = set()
    for hint in _DANGER_HINTS:
        if hint in upper:
            break
    else:
        return found
    for match in _DANGER.finditer(upper):
        group = match.lastgroup or ""
        if group == "lock":
            clause = " ".join(match.group().split())
            if clause in ("NOWAIT", "SKIP LOCKED"):
                reason = f"{clause} belongs to a locking read (FOR UPDATE / FOR SHARE)"
            elif "UPDATE" in clause:
                reason = f"SELECT … {clause} takes row locks"
            else:
                reason = f"SELECT … {clause} takes shared row locks"
            verdict.at_least(Risk.WRITE, reason)
        elif group == "into":
            if "dml" in found:
                continue  # WITH … INSERT INTO: already a write, and not SELECT … INTO
            following = _FOLLOWING_WORD.match(upper, match.end())
            word = following.group(1) if following else ""
            verdict.at_least(
                Risk.WRITE,
                _INTO_REASONS.get(word, "SELECT … INTO stores the result instead of returning it"),
            )
            if word == "OUTFILE" or (
                word == "DUMPFILE"
                and following is not None
                and _FILE_LITERAL.match(upper, following.end())
            ):
                verdict.add_targets([SERVER])  # the server's file system
        elif group == "dml":
            word = match.group()
            if _is_call(upper, match.end()) and word in ("INSERT", "REPLACE"):
                continue  # INSERT(str, pos, len, newstr) and REPLACE(str, from, to)
            if _follows_dot(upper, match.start()):
                continue  # t.update: a column, since a reserved word after "." is a name
            if first == "WITH":
                reason = f"WITH … {word} changes rows (a writable CTE)"
            else:
                reason = f"{word} appears outside literals and comments: not a plain query"
            verdict.at_least(Risk.WRITE, reason)
        elif group == "next":
            verdict.at_least(Risk.WRITE, "NEXT VALUE FOR advances a sequence, a persistent change")
            verdict.add_targets(_names_at(piece, match.end()))
        elif group == "sequence":
            if _is_call(upper, match.end()):
                continue  # NEXTVAL(s): the call scan reports it
            word = match.group()
            verdict.at_least(Risk.WRITE, f"{word} advances or sets a sequence, a persistent change")
            sequence = _qualified_before_dot(piece, match.start())
            if sequence:
                verdict.add_targets([sequence])
        elif group == "procedure":
            if first == "SHOW":
                continue  # SHOW PROCEDURE STATUS / SHOW CREATE PROCEDURE
            verdict.at_least(Risk.WRITE, "SELECT … PROCEDURE runs a procedure over the result")
        elif group == "assign":
            verdict.at_least(Risk.WRITE, ":= assigns a user variable (session state)")
        found.add(group)
    return found


def _is_call(text: str, position: int) -> bool:
    while position < len(text) and text[position] in _WHITESPACE:
        position += 1
    return position < len(text) and text[position] == "("


def _follows_dot(text: str, position: int) -> bool:
    while position and text[position - 1] in _WHITESPACE:
        position -= 1
    return position > 0 and text[position - 1] == "."


def _is_word_char(char: str) -> bool:
    return char.isalnum() or char in "_$" or char > "\x7f"


class _Call(NamedTuple):
    """A ``name (`` that makes a statement a write, unless the parse tree shows the name to
    be a CTE or derived-table name with a column list at exactly this position."""

    start: int  # where the name starts (its opening quote when quoted)
    reason: str
    targets: tuple[TableRef, ...]
    routine: TableRef | None = None  # the stored function it would run, unquoted


def _scan_calls(piece: Piece, upper: str) -> list[_Call]:
    """Judge every ``name (`` in the code (``upper`` is the upper-cased masked text)."""
    masked = piece.masked
    calls: list[_Call] = []
    parens: _Parens | None = None
    index = masked.find("(")
    while index >= 0:
        end = index
        while end and masked[end - 1] in _WHITESPACE:
            end -= 1
        if end:
            name, start, quoted = _name_ending_at(piece, end)
            if name is not None:  # not "((", ", (", "= (": no name before the parenthesis
                word = upper[start:end] if not quoted else ""
                gap = end != index  # blanks or a comment between the name and "("
                if (
                    word in _HARMLESS_BEFORE_PAREN
                    and (not gap or word in NEVER_STORED)
                    and not _follows_dot(masked, start)
                ):
                    pass  # COUNT(, IN (, CAST(, OVER (: the common case, settled at once
                elif word in CONTEXT_KEYWORDS and not _follows_dot(masked, start):
                    if parens is None:
                        parens = _Parens(masked)
                    if not _in_context(word, upper, start, index, parens):
                        calls.append(
                            _Call(start, _unknown_function(name), (), TableRef(None, name))
                        )
                else:
                    calls.append(_judge_call(piece, name, start, index, quoted=quoted, gap=gap))
        index = masked.find("(", index + 1)
    return calls


def _judge_call(
    piece: Piece, name: str, start: int, paren: int, *, quoted: bool, gap: bool
) -> _Call:
    """A ``name (`` that is not a known built-in spelt the way the server resolves it."""
    if _follows_dot(piece.masked, start):
        qualifier = _name_before_dot(piece, start)
        routine = TableRef(qualifier, name) if qualifier else None
        return _Call(
            start,
            f"calls {qualifier or '?'}.{name}(), a stored function, which can change data",
            (routine,) if routine else (),
            routine,
        )
    upper = name.upper()
    why = SIDE_EFFECT_FUNCTIONS.get(upper)
    if why is not None:
        targets: list[TableRef] = []
        if upper in ("NEXTVAL", "SETVAL"):
            targets = _names_at(piece, paren + 1)
        elif upper == "LOAD_FILE" or upper in SERVER_NAME_FUNCTIONS:
            targets = [SERVER]  # the server's file system; named locks (every session's)
        return _Call(start, why, tuple(targets))
    routine = TableRef(None, name)
    if upper in SERVER_NAME_FUNCTIONS:  # `is_used_lock`('x'): the built-in, by its name
        return _Call(start, SERVER_NAME_FUNCTIONS[upper], (SERVER,), routine)
    if quoted:
        return _Call(
            start,
            f"calls `{name}`(): a quoted name is looked up as a stored function (only some "
            "built-ins are found that way), which can change data",
            (),
            routine,
        )
    if gap:
        return _Call(
            start,
            f"calls {name} (…) with a space or comment before the parenthesis, which makes "
            f"MariaDB look for a stored function {name} first; stored functions can change "
            "data (write it without the gap)",
            (),
            routine,
        )
    return _Call(start, _unknown_function(name), (), routine)


class _Parens:
    """Matching parentheses of a statement's masked text, built only when a context check
    needs them (AGAINST, COLUMNS, JSON_TABLE): one pass, linear in the text."""

    __slots__ = ("close_of", "open_of", "parent")

    def __init__(self, masked: str) -> None:
        self.close_of: dict[int, int] = {}
        self.open_of: dict[int, int] = {}
        self.parent: dict[int, int] = {}  # an open parenthesis -> the one enclosing it (or -1)
        stack: list[int] = []
        for match in _PAREN.finditer(masked):
            position = match.start()
            if masked[position] == "(":
                self.parent[position] = stack[-1] if stack else -1
                stack.append(position)
            elif stack:
                opened = stack.pop()
                self.close_of[opened] = position
                self.open_of[position] = opened


_PAREN = re.compile(r"[()]")


def _in_context(word: str, upper: str, start: int, paren: int, parens: _Parens) -> bool:
    """Is this AGAINST / COLUMNS / JSON_TABLE the syntax, rather than a call? Only in
    ``MATCH (…) AGAINST (…)``, ``'path' COLUMNS (…)`` and ``JSON_TABLE(… 'path' COLUMNS (…))``
    — anywhere else MariaDB calls a stored function of that name (verified on 10.11)."""
    before = start
    while before and upper[before - 1] in _WHITESPACE:
        before -= 1
    if word == "COLUMNS":
        return before > 0 and upper[before - 1] == "'"
    if word == "AGAINST":
        opened = parens.open_of.get(before - 1, -1) if before else -1
        if opened < 0:
            return False
        end = opened
        while end and upper[end - 1] in _WHITESPACE:
            end -= 1
        return upper[max(0, end - 5) : end] == "MATCH" and (
            end == 5 or not _is_word_char(upper[end - 6])
        )
    close = parens.close_of.get(paren, -1)  # JSON_TABLE
    if close < 0:
        return False
    for match in _COLUMNS_CLAUSE.finditer(upper, paren + 1, close):
        if parens.parent.get(match.end() - 1) == paren:
            return True
    return False


def _name_ending_at(piece: Piece, end: int) -> tuple[str | None, int, bool]:
    """The word or quoted identifier ending at ``end``: (name, start, quoted)."""
    masked = piece.masked
    if end <= 0:
        return None, end, False
    last = masked[end - 1]
    if last in '`"':
        start = masked.rfind(last, 0, end - 1)
        if start < 0:
            return None, end, False
        return unquote(piece.text[start:end]), start, True
    if not _is_word_char(last):
        return None, end, False
    window_start = max(0, end - 96)
    start = window_start + len(masked[window_start:end].rstrip(_ASCII_WORD))
    while start and _is_word_char(masked[start - 1]):  # beyond ASCII, or a very long name
        start -= 1
    return piece.text[start:end], start, False


def _names_at(piece: Piece, position: int) -> list[TableRef]:
    match = _NAME.match(piece.masked, position)
    if match is None:
        return []
    first = _name_text(piece, match.span(1))
    if match.group(2) is None:
        return [TableRef(None, first)]
    return [TableRef(first, _name_text(piece, match.span(2)))]


def named_reads(piece: Piece) -> list[TableRef]:
    """What a statement names to functions, as reads. The sequences (``LASTVAL(other.s)``,
    ``PREVIOUS VALUE FOR other.s``, ``other.s.currval``, and the advancing forms): each name
    is read, since the server's answer (a value, or which error) tells what exists by that
    name; a name that cannot be read off the text reads the whole server (fail closed). And
    the names that belong to the whole server (SERVER_NAME_FUNCTIONS): named locks, shared
    with every other session, and the binary log's files."""
    found: list[TableRef] = []
    lower = piece.masked.lower()
    if "val" not in lower and "_lock" not in lower and "gtid_pos" not in lower:
        return found  # the common case, decided without the expression
    for match in _SEQUENCE_NAME.finditer(piece.masked):
        if match.group("server") is not None:
            found.append(SERVER)
            continue
        if match.group("suffix") is not None:
            name = _qualified_before_dot(piece, match.start("suffix"))
            found.append(name if name is not None else SERVER)
            continue
        names = _names_at(piece, match.end())
        found += names or [SERVER]
    return found


def _name_before_dot(piece: Piece, position: int) -> str | None:
    """For ``s.nextval`` or ``db.fn(``: the name before the dot that precedes ``position``."""
    masked = piece.masked
    while position and masked[position - 1] in _WHITESPACE:
        position -= 1
    if not position or masked[position - 1] != ".":
        return None
    position -= 1
    while position and masked[position - 1] in _WHITESPACE:
        position -= 1
    name, _, _ = _name_ending_at(piece, position)
    return name


def _qualified_before_dot(piece: Piece, position: int) -> TableRef | None:
    """For ``s.nextval`` or ``db.s.nextval``: the sequence before the dot, as written."""
    name = _name_before_dot(piece, position)
    if name is None:
        return None
    masked = piece.masked
    start = position
    while start and masked[start - 1] in _WHITESPACE:
        start -= 1
    start -= 1  # the dot
    while start and masked[start - 1] in _WHITESPACE:
        start -= 1
    _, name_start, _ = _name_ending_at(piece, start)
    return TableRef(_name_before_dot(piece, name_start), name)


def _name_text(piece: Piece, span: tuple[int, int]) -> str:
    written = piece.text[span[0] : span[1]]
    return unquote(written) if written.startswith("`") else written


def _parser_text(piece: Piece, upper: str) -> str:
    """The text to parse: comments blanked, and MariaDB's PREVIOUS VALUE FOR s (which the
    parser does not know) spelled as its equivalent LASTVAL(s), padded with blanks so that
    every offset in the tree is still an offset in the statement."""
    code = piece.code
    if "PREVIOUS" not in upper or len(upper) != len(code):
        return code
    parts: list[str] = []
    position = 0
    for match in _PREVIOUS_VALUE.finditer(upper):
        name = _NAME.match(piece.masked, match.end())
        if name is None:
            continue
        parts.append(code[position : match.start()])
        replacement = f"LASTVAL({code[name.start(1) : name.end()]})"
        parts.append(replacement.ljust(name.end() - match.start()))
        position = name.end()
    parts.append(code[position:])
    return "".join(parts)
