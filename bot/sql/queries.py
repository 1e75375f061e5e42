"""Read-only candidates: SELECT, WITH, TABLE, VALUES, parenthesised queries, and SHOW.

A query is read-only when nothing in it does more than read. In MySQL's grammar a SELECT
can act only through a few keyword-led clauses (INTO, FOR UPDATE/SHARE, LOCK IN SHARE MODE,
PROCEDURE, := assignments, NEXT VALUE FOR) and through the functions it calls. The lexical
scan looks for all of those in the masked text, where literals, quoted identifiers and
comments can no longer pose as keywords; it is a superset of what the parse tree would show
(a lock or an INTO in the tree always comes from one of these words), so the tree is not
walked again for them.

The parser (sqlglot, MySQL dialect) is the second opinion: the statement must parse, as a
query — or, after WITH, as the INSERT/UPDATE/DELETE of a writable CTE. Anything it cannot
read is UNKNOWN and not read-only. The tree also resolves names that look like calls but
are CTE or derived-table names with column lists (``WITH c (n) AS …``).
"""

from __future__ import annotations

import re
import string
import threading

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect

from bot.sql.functions import PAREN_KEYWORDS, SAFE_FUNCTIONS, SIDE_EFFECT_FUNCTIONS
from bot.sql.lexical import Piece
from bot.sql.risk import Risk, TableRef
from bot.sql.targets import dml_targets, read_tables
from bot.sql.tokens import unquote
from bot.sql.verdict import Verdict, read, unknown

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
        trees = [tree for tree in parsed if tree is not None]
    except Exception as error:  # fail closed on any parser failure
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else ""
        return None, f"{type(error).__name__}: {first_line.split(' <Token')[0]}"[:160]
    if len(trees) != 1:
        return None, f"it reads as {len(trees)} statements"
    return trees[0], ""


def judge_query(piece: Piece, first: str) -> Verdict:
    kind = _QUERY_KINDS.get(first, first)
    verdict = read(kind, f"{kind} only reads data")
    upper = piece.masked.upper()
    found = _scan_keywords(piece, upper, verdict, first=first)
    maybe_calls = _scan_calls(piece, verdict)
    tree, error = parse(_parser_text(piece, upper))
    if tree is None:
        if verdict.risk is Risk.READ_ONLY:
            return unknown(f"the parser cannot read it as a query ({error}); not read-only")
        return verdict
    dml_kind = _DML_KINDS.get(type(tree))
    if dml_kind is not None and first == "WITH":
        verdict.kind = dml_kind
        verdict.at_least(Risk.WRITE, f"WITH … {dml_kind} changes rows (a writable CTE)")
        verdict.add_targets(dml_targets(tree))
    elif not isinstance(tree, _QUERY_ROOTS):
        return unknown(f"the parser reads it as {type(tree).__name__}, not as a query")
    if maybe_calls:
        aliases = {alias.name.lower() for alias in tree.find_all(exp.TableAlias)}
        for name in maybe_calls:
            if name.lower() not in aliases:
                verdict.at_least(Risk.WRITE, _unknown_function(name))
    if "lock" in found:
        verdict.add_targets(read_tables(tree))
    return verdict


def judge_show(piece: Piece) -> Verdict:
    verdict = read("SHOW", "SHOW only reads metadata")
    _scan_keywords(piece, piece.masked.upper(), verdict, first="SHOW")
    for name in _scan_calls(piece, verdict):
        verdict.at_least(Risk.WRITE, _unknown_function(name))
    return verdict


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
            sequence = _name_before_dot(piece, match.start())
            if sequence:
                verdict.add_targets([TableRef(None, sequence)])
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


def _scan_calls(piece: Piece, verdict: Verdict) -> list[str]:
    """Judge every ``name(`` in the code; return names that may still be non-calls (CTE or
    derived-table names with column lists), for the parse tree to settle."""
    masked = piece.masked
    maybe: list[str] = []
    index = masked.find("(")
    while index >= 0:
        end = index
        while end and masked[end - 1] in _WHITESPACE:
            end -= 1
        if end:
            name, start, quoted = _name_ending_at(piece, end)
            if name is None:
                pass  # "((", ", (", "= (": no name before the parenthesis
            elif _follows_dot(masked, start):
                qualifier = _name_before_dot(piece, start) or "?"
                verdict.at_least(
                    Risk.WRITE,
                    f"calls {qualifier}.{name}(), a stored function, which can change data",
                )
            elif quoted:
                maybe.append(name)
            elif name.upper() not in _HARMLESS_BEFORE_PAREN:  # COUNT(, IN (, CAST(, …
                _judge_call(piece, name, index, verdict, maybe)
        index = masked.find("(", index + 1)
    return maybe


def _judge_call(piece: Piece, name: str, paren: int, verdict: Verdict, maybe: list[str]) -> None:
    upper = name.upper()
    why = SIDE_EFFECT_FUNCTIONS.get(upper)
    if why is not None:
        verdict.at_least(Risk.WRITE, why)
        if upper in ("NEXTVAL", "SETVAL"):
            verdict.add_targets(_names_at(piece, paren + 1))
        return
    maybe.append(name)


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


def _name_text(piece: Piece, span: tuple[int, int]) -> str:
    written = piece.text[span[0] : span[1]]
    return unquote(written) if written.startswith("`") else written


def _parser_text(piece: Piece, upper: str) -> str:
    """The text to parse: comments blanked, and MariaDB's PREVIOUS VALUE FOR s (which the
    parser does not know) spelled as its equivalent LASTVAL(s)."""
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
        parts.append(f"LASTVAL({code[name.start(1) : name.end()]})")
        position = name.end()
    parts.append(code[position:])
    return "".join(parts)
