"""Judging a stored routine's body as if its statements were written out.

``CALL p(…)`` and a stored function call run whatever the routine's body holds, with its
definer's rights and without another approval. The guard reads the body from the server
(information_schema.ROUTINES.ROUTINE_DEFINITION, or a trigger's ACTION_STATEMENT, or an
event's EVENT_DEFINITION) and judges it here: every statement inside the compound
statement (BEGIN … END, IF, CASE, loops, handlers, cursors) is classified like a
statement of its own, and so are the expressions that can read or call (IF and WHILE
conditions, DECLARE … DEFAULT, RETURN, a cursor's query).

What the body reaches cannot be bounded, and it gets the whole server (TableRef("*", "*"))
as a target and a read, when it runs SQL text the classifier never sees (PREPARE, EXECUTE,
EXECUTE IMMEDIATE), controls transactions (COMMIT, ROLLBACK, SET autocommit, …), or holds
anything the classifier cannot read. Routines it calls in turn are in ``calls``, for the
guard to read and judge the same way.
"""

from __future__ import annotations

from typing import NamedTuple

from bot.sql.lexical import Piece, split
from bot.sql.risk import Classification, Risk, Statement, _overall_reasons
from bot.sql.statements import judge_text, unbounded_body
from bot.sql.tokens import PUNCT, STRING, WORD, Token, qualified_name, tokenize
from bot.sql.verdict import SERVER, Verdict

_MAX_SEGMENTS = 10_000  # a body longer than this is not judged statement by statement


class _Segment(NamedTuple):
    """A statement or expression of the body: where it stands and what is judged."""

    start: int  # offsets into the body: body[start:end] is the segment's text
    end: int
    judged: str  # the text classified: the statement, or "SELECT <expression>"
    kind: str  # "IF condition", "DECLARE DEFAULT", … ; "" for a statement


def classify_routine_body(body: str) -> Classification:
    """Classify a stored routine's, trigger's or event's body statement by statement.

    Each Statement's text is its exact slice of ``body`` (``body[start:end]``); for an
    expression (a condition, a DEFAULT, RETURN's value) the kind says so and the expression
    is judged as ``SELECT <expression>``. A body with nothing in it (BEGIN END) is
    read_only with no statements.
    """
    segments: list[_Segment] = []
    failures: list[str] = []
    for piece in split(body):
        _walk(piece, segments, failures)
        if len(segments) > _MAX_SEGMENTS:
            failures.append("the body is too long to judge statement by statement")
            break
    statements = [_statement(body, segment) for segment in segments]
    statements += [_unreadable(body, why) for why in failures]
    if not statements:
        return Classification(body, Risk.READ_ONLY, (), ("the body does nothing",))
    risk = max((statement.risk for statement in statements), key=lambda risk: risk.rank)
    return Classification(body, risk, tuple(statements), _overall_reasons(tuple(statements)))


def _statement(body: str, segment: _Segment) -> Statement:
    try:
        verdict = judge_text(segment.judged, depth=1)
    except Exception as error:  # fail closed, as classify does
        verdict = Verdict(Risk.WRITE, "UNKNOWN", f"the classifier failed on it ({error!r})")
    why = unbounded_body(verdict)
    if why:
        verdict.add_reason(f"it {why}; it is treated as reaching the whole server")
        verdict.add_targets([SERVER])
        verdict.add_reads([SERVER])
    kind = f"{segment.kind} ({verdict.kind})" if segment.kind else verdict.kind
    text = body[segment.start : segment.end]
    reasons = tuple(verdict.reasons) or (f"{kind} is {verdict.risk.value}",)
    return Statement(
        text,
        segment.start,
        segment.end,
        verdict.risk,
        kind,
        reasons,
        tuple(verdict.targets),
        tuple(verdict.reads or ()),
        tuple(verdict.calls or ()),
    )


def _unreadable(body: str, why: str) -> Statement:
    return Statement(
        body,
        0,
        len(body),
        Risk.WRITE,
        "UNKNOWN",
        (f"{why}; it is treated as reaching the whole server",),
        (SERVER,),
        (SERVER,),
    )


# Words that open or close blocks and carry nothing to judge themselves.
_SKIPPED = frozenset({"ELSE", "LOOP", "REPEAT", "DO"})
_END_OF = frozenset({"IF", "WHILE", "LOOP", "REPEAT", "CASE", "FOR"})
# A condition, and the word that ends it.
_CONDITION_END = {"IF": "THEN", "ELSEIF": "THEN", "WHEN": "THEN", "WHILE": "DO", "UNTIL": "END"}
_NAME_ONLY = frozenset({"OPEN", "CLOSE", "LEAVE", "ITERATE"})
_HANDLER_CONDITIONS = frozenset({"SQLWARNING", "SQLEXCEPTION"})


def _walk(piece: Piece, segments: list[_Segment], failures: list[str]) -> None:
    """Cut one ";"-separated piece of the body into the statements and expressions it
    holds, stepping over the compound statement's own keywords."""
    tokens = tokenize(piece)
    index = 0
    while index < len(tokens):
        token = tokens[index]
        word = token.word if token.kind is WORD else ""
        after = index + 1
        if token.is_identifier and after < len(tokens) and tokens[after].word == ":":
            index += 2  # a label
        elif word == "BEGIN":
            index = after + 2 if _words_at(tokens, after, "NOT", "ATOMIC") else after
        elif word == "END":
            if after < len(tokens) and tokens[after].word in _END_OF:
                after += 1
            if after < len(tokens) and tokens[after].is_identifier:
                after += 1  # END label
            index = after
        elif word in _SKIPPED:
            index = after
        elif word in _CONDITION_END:
            stop = _find(tokens, after, _CONDITION_END[word])
            _expression(piece, tokens, after, stop, f"{word} condition", segments, failures)
            index = stop + 1 if word != "UNTIL" else stop
        elif word == "CASE":
            stop = _find(tokens, after, "WHEN")
            if stop > after:
                _expression(piece, tokens, after, stop, "CASE value", segments, failures)
            index = stop
        elif word == "FOR":
            index = _for_loop(piece, tokens, after, segments, failures)
        elif word == "DECLARE":
            index = _declare(piece, tokens, after, segments, failures)
        elif word in _NAME_ONLY or word == "FETCH":
            if word in _NAME_ONLY and len(tokens) - index > 2:
                failures.append(f"{word} followed by more than a name")
            index = len(tokens)  # OPEN c, LEAVE l, FETCH [NEXT FROM] c INTO a, b
        elif word == "RETURN":
            _expression(piece, tokens, after, len(tokens), "RETURN", segments, failures)
            index = len(tokens)
        else:  # a statement of its own, to the end of the piece
            start = token.start
            segments.append(_Segment(piece.start + start, piece.end, piece.text[start:], ""))
            index = len(tokens)


def _words_at(tokens: list[Token], index: int, *words: str) -> bool:
    return [token.word for token in tokens[index : index + len(words)]] == list(words)


def _find(tokens: list[Token], start: int, word: str) -> int:
    """The first ``word`` outside parentheses and nested CASE … END expressions (an IF
    condition may hold ``CASE WHEN … THEN … END``); len(tokens) when there is none."""
    depth = cases = 0
    for index in range(start, len(tokens)):
        token = tokens[index]
        if token.kind is PUNCT and token.word in "()":
            depth += 1 if token.word == "(" else -1
        elif depth == 0 and token.kind is WORD:
            if token.word == word and cases == 0:
                return index
            if token.word == "CASE":
                cases += 1
            elif token.word == "END" and cases:
                cases -= 1
    return len(tokens)


def _expression(
    piece: Piece,
    tokens: list[Token],
    start: int,
    stop: int,
    kind: str,
    segments: list[_Segment],
    failures: list[str],
) -> None:
    """An expression of the body (a condition, a DEFAULT, RETURN's value), judged as the
    query ``SELECT <expression>``: it reads and calls what that query would."""
    if start >= stop:
        if stop >= len(tokens) and kind != "RETURN":
            failures.append(f"a {kind} without its end")
        return
    begin = tokens[start].start
    end = tokens[stop - 1].end
    text = piece.text[begin:end]
    segments.append(_Segment(piece.start + begin, piece.start + end, "SELECT " + text, kind))


def _for_loop(
    piece: Piece, tokens: list[Token], index: int, segments: list[_Segment], failures: list[str]
) -> int:
    """MariaDB's FOR: ``FOR i IN [REVERSE] a .. b DO``, ``FOR r IN cursor DO`` or
    ``FOR r IN (SELECT …) DO``; the bounds or the query are judged."""
    at = _find(tokens, index, "IN")
    do = _find(tokens, at + 1, "DO")
    start = at + 1
    if start < len(tokens) and tokens[start].word == "REVERSE":
        start += 1
    dots = next(
        (
            position
            for position in range(start, do - 1)
            if tokens[position].word == "." and tokens[position + 1].word == "."
        ),
        -1,
    )
    if dots < 0:
        if do - start > 1:  # not just a cursor's name: a query in parentheses
            _expression(piece, tokens, start, do, "FOR query", segments, failures)
    else:
        _expression(piece, tokens, start, dots, "FOR bound", segments, failures)
        _expression(piece, tokens, dots + 2, do, "FOR bound", segments, failures)
    return do + 1


def _declare(
    piece: Piece, tokens: list[Token], index: int, segments: list[_Segment], failures: list[str]
) -> int:
    """DECLARE a variable (its DEFAULT is judged, and ``TYPE OF other.t`` reads other.t),
    a condition (nothing), a cursor (its query is judged) or a handler (its statement is
    walked like any other). Returns where walking goes on."""
    words = [token.word for token in tokens[index : index + 3]]
    if "CONDITION" in words[1:2]:
        return len(tokens)
    if words[1:2] == ["CURSOR"]:
        at = _find(tokens, index + 2, "FOR")
        if at + 1 < len(tokens):
            start = tokens[at + 1].start
            segments.append(_Segment(piece.start + start, piece.end, piece.text[start:], ""))
        else:
            failures.append("a cursor without its query")
        return len(tokens)
    if words[1:2] == ["HANDLER"]:
        return _handler_statement(tokens, index + 2, failures)
    for position in range(index, len(tokens) - 1):
        if tokens[position].word == "OF" and tokens[position - 1].word == "TYPE":
            # ROW TYPE OF other.t, TYPE OF t.col, TYPE OF other.t.col: the table's definition
            anchor, after = qualified_name(tokens, position + 1)
            if anchor is not None:
                start, end = tokens[position + 1].start, tokens[after - 1].end
                table = _quoted(anchor.name) if anchor.schema is None else _quoted(anchor.schema)
                if anchor.schema is not None and _words_at(tokens, after, "."):
                    table += "." + _quoted(anchor.name)  # schema.table.column
                elif anchor.schema is not None and tokens[position - 2].word == "ROW":
                    table += "." + _quoted(anchor.name)  # ROW TYPE OF schema.table
                text = f"SELECT * FROM {table}"
                segments.append(_Segment(piece.start + start, piece.start + end, text, "TYPE OF"))
    default = _find(tokens, index, "DEFAULT")
    if default < len(tokens):
        _expression(piece, tokens, default + 1, len(tokens), "DECLARE DEFAULT", segments, failures)
    return len(tokens)


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _handler_statement(tokens: list[Token], index: int, failures: list[str]) -> int:
    """``DECLARE {CONTINUE|EXIT|UNDO} HANDLER FOR cond[, cond] statement``: the index of
    the statement, after the conditions (SQLSTATE [VALUE] '…', SQLWARNING, NOT FOUND,
    SQLEXCEPTION, an error number or a condition name)."""
    if index >= len(tokens) or tokens[index].word != "FOR":
        failures.append("a handler without FOR")
        return len(tokens)
    index += 1
    while index < len(tokens):
        word = tokens[index].word
        if word == "SQLSTATE":
            index += 1
            if index < len(tokens) and tokens[index].word == "VALUE":
                index += 1
            if index < len(tokens) and tokens[index].kind is STRING:
                index += 1
        elif word in _HANDLER_CONDITIONS:
            index += 1
        elif word == "NOT" and _words_at(tokens, index + 1, "FOUND"):
            index += 2
        elif tokens[index].is_identifier:
            index += 1  # 1062, or a declared condition's name
        else:
            failures.append("a handler condition the classifier cannot read")
            return len(tokens)
        if index < len(tokens) and tokens[index].word == ",":
            index += 1
            continue
        return index
    return index
