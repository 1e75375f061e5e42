"""Judging one statement, dispatched on its leading keyword.

Queries (SELECT, WITH, TABLE, VALUES, "(") go to bot.sql.queries; UPDATE and DELETE are
parsed for their targets; everything else is judged from its leading keywords,
because the parser adds nothing there: it falls back to an opaque Command for most admin
and DDL statements, and silently misreads some (``START SLAVE`` as a transaction,
``SHUTDOWN`` as a column, ``FLUSH PRIVILEGES`` as an alias). A leading keyword that is not
in these tables makes the statement UNKNOWN, which is not read-only.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from itertools import pairwise

from sqlglot import exp

from bot.sql.lexical import Piece, split, unwrap_executable_comments
from bot.sql.queries import (
    judge_query,
    judge_show,
    named_reads,
    parse,
    reach,
    subquery_reads,
)
from bot.sql.risk import Risk, TableRef
from bot.sql.targets import (
    dml_targets,
    lexical_dml_targets,
    lexical_query_reads,
    qualified_names,
    query_reads,
    read_tables,
)
from bot.sql.tokens import (
    PUNCT,
    QUOTED,
    STRING,
    VARIABLE,
    WORD,
    Token,
    find_word,
    name_list,
    qualified_name,
    skip_words,
    tokenize,
    unquote,
)
from bot.sql.verdict import SERVER, Verdict, read, unknown, whole_schema

_MAX_DEPTH = 4  # EXPLAIN, PREPARE and executable comments nest judgements; enough is enough
_FIRST_WORD = re.compile(r"\s*(\(|[^\W\d][\w$]*)")
_INSERT_CLAUSES = re.compile(r"\b(?:IGNORE|SELECT)\b|\bON\s+DUPLICATE\s+KEY\s+UPDATE\b")


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
            not_calls=_CALLED_NAME if first != "CALL" else _procedure_name(piece),
        )
    return verdict


# Statements whose "name (" is a call of a stored function (or, for CALL, the procedure);
# elsewhere (DDL, admin) it is mostly a table, a column type or an index list. DML does its
# own (see _dml).
_CALLING_STATEMENTS = frozenset({"SET", "DO", "CALL", "EXECUTE"})
# The leading keyword is never a call (DO (SELECT …)).
_CALLED_NAME = frozenset({0})


def _procedure_name(piece: Piece) -> frozenset[int]:
    """CALL p(…): the procedure's own name is the call itself, not a stored function."""
    tokens = tokenize(piece, limit=6)
    name, after = qualified_name(tokens, 1)
    return _CALLED_NAME | ({tokens[after - 1].start} if name is not None else set())


_INSERT_NAME_MODIFIERS = frozenset({"LOW_PRIORITY", "DELAYED", "HIGH_PRIORITY", "IGNORE", "INTO"})


# --- queries and DML ------------------------------------------------------------------


def _query(piece: Piece, first: str, depth: int) -> Verdict:
    return judge_query(piece, first)


def _show(piece: Piece, first: str, depth: int) -> Verdict:
    verdict = judge_show(piece)
    upper = piece.masked.upper()
    words = upper.split(None, 4)[1:4]
    if words[:1] == ["PROCESSLIST"] or words[:2] == ["FULL", "PROCESSLIST"]:
        verdict.add_reads([_PROCESSLIST])  # the commonest SHOW with reads, without tokens
    elif _SHOW_READS_HINT.search(upper):
        verdict.add_reads(_show_reads(tokenize(piece, limit=12)))  # enough for any SHOW
    if "SELECT" in upper:
        verdict.add_reads(subquery_reads(piece, upper))  # SHOW … WHERE x IN (SELECT …)
    return verdict


# A SHOW without one of these words reads only server metadata (names, settings, counters).
_SHOW_READS_HINT = re.compile(r"\b(?:FROM|IN|CREATE|CODE|PROCESSLIST|EVENTS|GRANTS|FOR)\b")


# SHOW forms naming a table (or a database, then a whole schema) after FROM/IN.
_SHOW_FROM = frozenset(
    {"TABLES", "STATUS", "TRIGGERS", "EVENTS", "COLUMNS", "FIELDS", "INDEX", "INDEXES", "KEYS"}
)
_SHOW_OF_TABLE = frozenset({"COLUMNS", "FIELDS", "INDEX", "INDEXES", "KEYS"})
_SHOW_CREATE = frozenset(
    {"TABLE", "VIEW", "SEQUENCE", "PROCEDURE", "FUNCTION", "TRIGGER", "EVENT", "PACKAGE"}
)
# Other connections' statements (with their literal values): what PROCESSLIST holds.
_PROCESSLIST = TableRef("information_schema", "PROCESSLIST")


def _show_reads(tokens: list[Token]) -> list[TableRef]:
    """What a SHOW reads beyond server metadata (names, settings, counters): a table's
    columns, indexes or definition, a schema's tables, other connections' statements,
    binary-log row events (every schema's data) and accounts. As written."""
    words = [token.word for token in tokens[1:4]]
    index = skip_words(tokens, 1, frozenset({"FULL", "EXTENDED", "OPEN", "TABLE"}))
    what = tokens[index].word if index < len(tokens) else ""
    if "CREATE" in words[:1]:
        obj = tokens[2].word if len(tokens) > 2 else ""
        if obj in ("DATABASE", "SCHEMA"):
            at = skip_words(tokens, 3, _IF_EXISTS)
            return [whole_schema(tokens[at].name)] if at < len(tokens) else []
        if obj in _SHOW_CREATE:
            name, _ = qualified_name(tokens, skip_words(tokens, 3, frozenset({"BODY"})))
            return [name] if name else []
        return [SERVER]  # SHOW CREATE USER / ROLE / SERVER: accounts and servers
    if len(words) > 1 and words[1] == "CODE":
        name, _ = qualified_name(tokens, 3)  # SHOW PROCEDURE|FUNCTION CODE name
        return [name] if name else []
    if what in ("PROCESSLIST",) or words[:2] in (["EXPLAIN", "FOR"], ["ANALYZE", "FOR"]):
        return [_PROCESSLIST]
    if len(words) > 1 and words[1] == "EVENTS" and words[0] in ("BINLOG", "RELAYLOG"):
        return [SERVER]
    if words[:2] == ["GRANTS", "FOR"] and (len(words) < 3 or words[2] != "CURRENT_USER"):
        return [SERVER]  # another account's privileges
    if what not in _SHOW_FROM:
        return []
    names: list[TableRef] = []
    position = index + 1
    while position + 1 < len(tokens) and tokens[position].word in ("FROM", "IN"):
        name, position = qualified_name(tokens, position + 1)
        if name is not None:
            names.append(name)
    if what not in _SHOW_OF_TABLE:
        return [whole_schema(name.name) for name in names[:1]]
    if len(names) == 2:  # SHOW COLUMNS FROM t FROM db: both readings, a superset
        return [names[0], TableRef(names[1].name, names[0].name)]
    return names[:1]


_DML_REASONS = {
    "INSERT": "INSERT adds rows",
    "REPLACE": "REPLACE deletes and re-inserts rows",
    "UPDATE": "UPDATE changes rows",
    "DELETE": "DELETE removes rows",
}


def _dml_reads(
    piece: Piece, first: str, tree: exp.Expression | None, targets: list[TableRef]
) -> list[TableRef]:
    """What a DML statement reads: every table in its tree (its targets too, joins,
    subqueries, INSERT … SELECT's source). INSERT is parsed for this only when it holds a
    query; a statement the parser cannot read reads its targets and its subqueries'
    tables (a query that does not parse: the whole server)."""
    upper = piece.masked.upper()
    if tree is None and "SELECT" in upper:
        if upper.count("SELECT") == 1 and "TABLE" not in upper and "WITH" not in upper:
            # INSERT … SELECT without subqueries: its FROM clause, without a parse.
            tokens = tokenize(piece)
            select = next((i for i, token in enumerate(tokens) if token.word == "SELECT"), -1)
            if select >= 0:
                return [*targets, *lexical_query_reads(tokens, select)]
        if first == "INSERT":
            tree, _ = parse(piece.code)
    if isinstance(tree, (exp.Insert, exp.Update, exp.Delete)):
        return query_reads(tree, upper)
    reads = list(targets)
    if "SELECT" in upper:
        reads += subquery_reads(piece, upper)
    return reads


def _dml(piece: Piece, first: str, depth: int) -> Verdict:
    verdict = Verdict(Risk.WRITE, first, _DML_REASONS[first])
    tree: exp.Expression | None = None
    not_calls = _CALLED_NAME
    if first in ("INSERT", "REPLACE"):
        # The target is simply the first name after the modifiers; no parse needed (and the
        # parser only knows REPLACE as an opaque Command).
        tokens = tokenize(piece, limit=16)
        targets = lexical_dml_targets(tokens, 0)
        _, after = qualified_name(tokens, skip_words(tokens, 1, _INSERT_NAME_MODIFIERS))
        if targets and after:
            not_calls = frozenset({0, tokens[after - 1].start})  # INSERT INTO t (a, b)
    else:
        # UPDATE and DELETE name their targets through aliases and joins: parse to resolve.
        tree, _ = parse(piece.code)
        if isinstance(tree, (exp.Update, exp.Delete)):
            targets = dml_targets(tree)
        else:
            targets = lexical_dml_targets(tokenize(piece), 0)
    verdict.add_targets(targets)
    verdict.add_reads(_dml_reads(piece, first, tree, targets))
    reach(piece, verdict, reads=False, not_calls=not_calls)
    if first in ("INSERT", "REPLACE"):
        for match in _INSERT_CLAUSES.finditer(piece.masked.upper()):
            clause = match.group()
            if clause == "IGNORE":
                verdict.add_reason(f"{first} IGNORE adds rows, silently skipping failing ones")
            elif clause == "SELECT":
                verdict.add_reason(f"{first} … SELECT copies rows from a query into a table")
            else:
                verdict.add_reason("INSERT … ON DUPLICATE KEY UPDATE also changes existing rows")
    if first in ("UPDATE", "DELETE") and len(targets) > 1:
        verdict.add_reason(f"a multi-table {first} changes rows in several tables")
    if not targets:
        verdict.add_reason("its target table could not be determined")
    return verdict


# --- EXPLAIN / DESCRIBE / ANALYZE -------------------------------------------------------

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


def _explain(piece: Piece, first: str, depth: int) -> Verdict:
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
        verdict.add_reads([_PROCESSLIST])
        return verdict
    if token.word in _EXPLAINABLE:
        kind = "EXPLAIN ANALYZE" if "ANALYZE" in seen else "EXPLAIN"
        verdict = read(kind, "EXPLAIN shows a plan without running the statement")
        if "ANALYZE" in seen:
            verdict.at_least(Risk.WRITE, "EXPLAIN ANALYZE runs the statement to measure it")
        if "INTO" in seen:
            verdict.at_least(Risk.WRITE, "EXPLAIN … INTO @variable assigns a user variable")
        inner = judge_text(piece.text[token.start :], depth + 1)
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


def _analyze(piece: Piece, first: str, depth: int) -> Verdict:
    tokens = tokenize(piece)
    index = skip_words(tokens, 1, frozenset({"NO_WRITE_TO_BINLOG", "LOCAL"}))
    if index < len(tokens) and tokens[index].word in ("TABLE", "TABLES"):
        return _admin(piece, first, depth)
    index, _ = _explain_prefix(tokens, index)
    verdict = Verdict(Risk.WRITE, "ANALYZE", "ANALYZE <statement> runs the statement to measure it")
    if index >= len(tokens) or tokens[index].word not in _EXPLAINABLE:
        verdict.kind = "UNKNOWN"
        verdict.add_reason("ANALYZE of something that is neither a table nor a statement")
        return verdict
    verdict.absorb(judge_text(piece.text[tokens[index].start :], depth + 1), "the statement: ")
    return verdict


# --- DDL ------------------------------------------------------------------------------

_OBJECTS = {
    "TABLE": "TABLE",
    "TABLES": "TABLE",
    "VIEW": "VIEW",
    "INDEX": "INDEX",
    "DATABASE": "DATABASE",
    "SCHEMA": "DATABASE",
    "USER": "USER",
    "ROLE": "ROLE",
    "TRIGGER": "TRIGGER",
    "EVENT": "EVENT",
    "PROCEDURE": "PROCEDURE",
    "FUNCTION": "FUNCTION",
    "SEQUENCE": "SEQUENCE",
    "PACKAGE": "PACKAGE",
    "SERVER": "SERVER",
    "TABLESPACE": "TABLESPACE",
    "LOGFILE": "LOGFILE GROUP",
    "RESOURCE": "RESOURCE GROUP",
    "REFERENCE": "SPATIAL REFERENCE SYSTEM",
    "INSTANCE": "INSTANCE",
    "PREPARE": "PREPARE",  # DROP PREPARE is DEALLOCATE PREPARE
}
# Objects that live outside any schema: accounts, privileges, servers, storage, plugins.
_SERVER_OBJECTS = frozenset(
    {"USER", "ROLE", "SERVER", "TABLESPACE", "LOGFILE GROUP", "RESOURCE GROUP"}
    | {"SPATIAL REFERENCE SYSTEM", "INSTANCE"}
)
_SCHEMA_OPTIONS = frozenset(
    {"DEFAULT", "CHARACTER", "CHARSET", "COLLATE", "COMMENT", "ENCRYPTION", "READ", "UPGRADE"}
)
_IF_EXISTS = frozenset({"IF", "NOT", "EXISTS"})
_DDL_WHAT = {
    "CREATE": "creates",
    "ALTER": "changes",
    "DROP": "deletes",
    "RENAME": "renames",
}


def _ddl(piece: Piece, first: str, depth: int) -> Verdict:
    tokens = tokenize(piece)
    if first == "TRUNCATE":
        index = skip_words(tokens, 1, frozenset({"TABLE"}))
        verdict = Verdict(
            Risk.DDL, "TRUNCATE TABLE", "TRUNCATE TABLE deletes every row at once (DDL: no undo)"
        )
        verdict.add_targets(name_list(tokens, index))
        return verdict
    if first in ("GRANT", "REVOKE"):
        verdict = Verdict(Risk.DDL, first, f"{first} changes account privileges, server-wide")
        verdict.add_targets([SERVER])
        return verdict
    obj, index, temporary = _ddl_object(tokens)
    if obj == "PREPARE" and first == "DROP":
        return _admin(piece, "DEALLOCATE", depth)
    kind = f"{first} {obj}" if obj else first
    verdict = Verdict(Risk.DDL, kind, _ddl_reason(first, obj, kind, temporary))
    if obj is None:
        verdict.add_reason("its object could not be identified")
        return verdict
    targets = _ddl_targets(first, obj, tokens, index)
    verdict.add_targets(targets)
    if not targets:
        verdict.add_reason("its target could not be determined")
    if first in ("CREATE", "ALTER"):
        _reached_by_ddl(piece, tokens, first, obj, index, verdict, depth)
    return verdict


def _ddl_reason(verb: str, obj: str | None, kind: str, temporary: bool) -> str:
    if obj in _SERVER_OBJECTS:
        return f"{kind} changes server-wide objects (accounts, servers or storage)"
    if temporary:
        return f"{verb} TEMPORARY TABLE is DDL even though the table lasts only for the session"
    if kind == "DROP TABLE":
        return "DROP TABLE deletes tables and all their rows"
    if kind == "DROP DATABASE":
        return "DROP DATABASE deletes a whole schema"
    what = _DDL_WHAT.get(verb, "changes")
    return f"{kind} is DDL: it {what} schema objects (and commits any open transaction)"


def _ddl_object(tokens: list[Token]) -> tuple[str | None, int, bool]:
    """Find the object word after CREATE/ALTER/DROP/RENAME and its modifiers
    (OR REPLACE, TEMPORARY, ALGORITHM=…, DEFINER=…, SQL SECURITY …, UNIQUE, ONLINE …)."""
    temporary = False
    index = 1
    while index < len(tokens) and index < 16:
        token = tokens[index]
        if token.word == "(":
            break
        if token.kind is WORD:
            if token.word in _OBJECTS:
                return _OBJECTS[token.word], index + 1, temporary
            if token.word == "TEMPORARY":
                temporary = True
            elif (
                token.word == "DEFINER"
                and index + 1 < len(tokens)
                and tokens[index + 1].word == "="
            ):
                index = _skip_definer(tokens, index + 2)  # not SQL SECURITY DEFINER
                continue
        index += 1
    return None, index, temporary


def _skip_definer(tokens: list[Token], index: int) -> int:
    """Skip ``user@host`` / ``'u'@'h'`` / ``CURRENT_USER[()]`` after DEFINER =."""
    if index < len(tokens) and tokens[index].kind in (WORD, QUOTED, STRING):
        index += 1
    if index < len(tokens) and tokens[index].kind is VARIABLE:
        index += 1
    if index + 1 < len(tokens) and tokens[index].word == "(" and tokens[index + 1].word == ")":
        index += 2
    return index


def _ddl_targets(verb: str, obj: str, tokens: list[Token], index: int) -> list[TableRef]:
    if obj in _SERVER_OBJECTS:
        return [SERVER]
    index = skip_words(tokens, index, _IF_EXISTS)
    if obj == "DATABASE":
        token = tokens[index] if index < len(tokens) else None
        if token is None or (token.kind is WORD and token.word in _SCHEMA_OPTIONS):
            return [whole_schema(None)]  # ALTER DATABASE without a name: the current one
        return [whole_schema(token.name)] if token.is_identifier else []
    if obj == "INDEX":
        on = find_word(tokens, "ON", index)
        name, _ = qualified_name(tokens, on + 1) if on >= 0 else (None, 0)
        return [name] if name else []
    if obj == "PACKAGE":
        index = skip_words(tokens, index, frozenset({"BODY"}))
    if verb == "RENAME":
        return _renamed(tokens, index)
    if verb == "DROP":
        return name_list(tokens, index)
    name, after = qualified_name(tokens, index)
    targets = [name] if name else []
    if obj == "TRIGGER":
        on = find_word(tokens, "ON", after)
        table, _ = qualified_name(tokens, on + 1) if on >= 0 else (None, 0)
        if table:
            targets.append(table)
    elif obj == "TABLE" and verb == "ALTER":
        targets += _renamed_by_alter(tokens, after)
    elif obj == "TABLE" and verb == "CREATE":
        targets += _referenced_tables(tokens, after)
    elif obj == "FUNCTION" and find_word(tokens, "SONAME", after) >= 0:
        targets.append(SERVER)  # a loadable function: a shared library loaded into the server
    elif obj == "EVENT" and verb == "ALTER":
        rename = find_word(tokens, "RENAME", after)
        renamed, _ = qualified_name(tokens, rename + 2) if rename >= 0 else (None, 0)
        if renamed:
            targets.append(renamed)  # ALTER EVENT e RENAME TO other.e moves it
    return targets


# --- what CREATE and ALTER reach beyond the object they name ------------------------------


def _reached_by_ddl(
    piece: Piece, tokens: list[Token], verb: str, obj: str, index: int, verdict: Verdict, depth: int
) -> None:
    """Tables, schemas and server resources a created or altered object writes later: a
    stored program's body, a view's tables, a MERGE table's union, a remote or file-backed
    storage engine. They become targets, so the guard's own-schema rule sees them now."""
    if obj in _PROGRAMS:
        _program_body(piece, tokens, verb, obj, index, verdict, depth)
    elif obj == "VIEW":
        _view_tables(piece, tokens, index, verdict)
    elif obj == "TABLE":
        _table_options(tokens, index, verb, verdict)
        if verb == "CREATE":
            _, like = qualified_name(tokens, skip_words(tokens, index, _IF_EXISTS))
            if like < len(tokens) and tokens[like].word == "(":
                like += 1  # CREATE TABLE t (LIKE u)
            if like < len(tokens) and tokens[like].word == "LIKE":
                source, _ = qualified_name(tokens, like + 1)
                verdict.add_reads([source] if source else [SERVER])


_PROGRAMS = frozenset({"TRIGGER", "EVENT", "PROCEDURE", "FUNCTION", "PACKAGE"})
# Statements that open a compound body: BEGIN … END, flow control, labels (name: …).
_COMPOUND = frozenset({"BEGIN", "IF", "CASE", "LOOP", "WHILE", "REPEAT", "DECLARE", "FOR"})
_CHARACTERISTICS = frozenset(
    {"COMMENT", "LANGUAGE", "SQL", "NOT", "DETERMINISTIC", "CONTAINS", "NO", "READS"}
    | {"MODIFIES", "DATA", "SECURITY", "DEFINER", "INVOKER"}
)
_NO_BODY = -2  # ALTER PROCEDURE/FUNCTION, ALTER EVENT without DO: nothing to judge


def _program_body(
    piece: Piece, tokens: list[Token], verb: str, obj: str, index: int, verdict: Verdict, depth: int
) -> None:
    """A trigger, event, procedure or function runs its body later, without approval and
    with its definer's rights: judge the body now and make what it writes a target.

    A body of one statement is judged as that statement (a function's ``RETURN expr`` as
    ``SELECT expr``). A compound body (BEGIN … END, IF, loops, labels) or one that cannot be
    found is not checked statement by statement: it gets the server-wide target "*", so the
    guard refuses it. Such bodies need ";" inside, so the bot — which runs statements one
    at a time — receives them split and cut short anyway."""
    if obj == "FUNCTION" and find_word(tokens, "SONAME", index) >= 0:
        return  # a loadable function has no SQL body (and is server-wide already)
    start = _body_start(tokens, verb, obj, index)
    if start == _NO_BODY:
        return
    if (
        start < 0
        or start >= len(tokens)
        or tokens[start].word in _COMPOUND
        or (start + 1 < len(tokens) and tokens[start + 1].word == ":")
    ):
        verdict.add_reason(
            f"the {obj.lower()}'s body is a compound statement (or cannot be found) and is not "
            "checked here; it is treated as reaching the whole server"
        )
        verdict.add_targets([SERVER])
        verdict.add_reads([SERVER])
        return
    body = piece.text[tokens[start].start :]
    if tokens[start].word == "RETURN":
        body = "SELECT " + piece.text[tokens[start].end :]
    absorb_body(verdict, judge_text(body, depth + 1), f"the {obj.lower()}'s body")


def absorb_body(verdict: Verdict, body: Verdict, what: str) -> None:
    """A stored program's body runs later, without approval and with its definer's rights:
    the program is at least as risky as its body, and reaches what the body reaches. A body
    that runs SQL text the classifier never sees (PREPARE, EXECUTE, EXECUTE IMMEDIATE),
    controls transactions, or cannot be judged reaches the whole server."""
    if body.risk is not Risk.READ_ONLY and body.reasons:
        verdict.at_least(body.risk, f"its body runs later, without approval: {body.reasons[0]}")
    verdict.add_targets(body.targets)
    verdict.add_reads(body.reads or ())
    verdict.add_calls(body.calls or ())
    why = unbounded_body(body)
    if why:
        verdict.add_reason(f"{what} {why}; it is treated as reaching the whole server")
        verdict.add_targets([SERVER])
        verdict.add_reads([SERVER])


def unbounded_body(body: Verdict) -> str:
    """Why what a stored program's body reaches cannot be bounded, or "" when it can."""
    if body.dynamic:
        return "runs dynamic SQL (PREPARE / EXECUTE / EXECUTE IMMEDIATE), which is never judged"
    if body.risk is Risk.TRANSACTION:
        return "controls transactions or session settings (COMMIT, ROLLBACK, autocommit, …)"
    if body.kind == "UNKNOWN":
        return "cannot be judged"
    return ""


def _body_start(tokens: list[Token], verb: str, obj: str, index: int) -> int:
    """Index of the body's first token; -1 when it cannot be found, _NO_BODY for none."""
    _, after = qualified_name(tokens, skip_words(tokens, index, _IF_EXISTS))
    if obj == "TRIGGER":
        each = find_word(tokens, "EACH", after)
        if each < 0 or each + 1 >= len(tokens) or tokens[each + 1].word != "ROW":
            return -1
        start = each + 2
        if start < len(tokens) and tokens[start].word in ("FOLLOWS", "PRECEDES"):
            _, start = qualified_name(tokens, start + 1)
        return start
    if obj == "EVENT":
        do = find_word(tokens, "DO", after)
        if do < 0:
            return _NO_BODY if verb == "ALTER" else -1
        return do + 1
    if obj == "PACKAGE" or verb != "CREATE":
        return -1 if obj == "PACKAGE" else _NO_BODY  # a package body is always compound
    if after >= len(tokens) or tokens[after].word != "(":
        return -1
    start = _after_group(tokens, after)
    if obj == "FUNCTION":
        # RETURNS <type> [characteristics] RETURN …: the type may hold any words (CHARACTER
        # SET …, ENUM(…)), so look for the first RETURN, compound keyword or label instead.
        depth = 0
        for position in range(start, len(tokens)):
            token = tokens[position]
            if token.kind is PUNCT and token.word in "()":
                depth += 1 if token.word == "(" else -1
            elif (
                depth == 0
                and token.kind is WORD
                and (
                    token.word == "RETURN"
                    or token.word in _COMPOUND
                    or (position + 1 < len(tokens) and tokens[position + 1].word == ":")
                )
            ):
                return position
        return -1
    while start < len(tokens) and (
        (tokens[start].kind is WORD and tokens[start].word in _CHARACTERISTICS)
        or (tokens[start].kind is STRING and tokens[start - 1].word == "COMMENT")
    ):
        start += 1
    return start


def _after_group(tokens: list[Token], opening: int) -> int:
    """The index after the ")" that closes the "(" at ``opening`` (len(tokens) if none)."""
    depth = 0
    for position in range(opening, len(tokens)):
        word = tokens[position].word
        if tokens[position].kind is PUNCT and word in "()":
            depth += 1 if word == "(" else -1
            if depth == 0:
                return position + 1
    return len(tokens)


_CHECK_OPTION = re.compile(r"\bWITH\s+(?:CASCADED\s+|LOCAL\s+)?CHECK\s+OPTION\s*$")


def _view_tables(piece: Piece, tokens: list[Token], index: int, verdict: Verdict) -> None:
    """A view is a way to write its tables (UPDATE v changes the table behind it, in
    whatever schema), so every table its query names is a target, as written."""
    _, after = qualified_name(tokens, skip_words(tokens, index, _IF_EXISTS))
    if after < len(tokens) and tokens[after].word == "(":
        after = _after_group(tokens, after)  # the view's column list
    as_ = find_word(tokens, "AS", after)
    if as_ < 0 or as_ + 1 >= len(tokens):
        return
    start = tokens[as_ + 1].start
    code = piece.code[start:]
    option = _CHECK_OPTION.search(piece.masked[start:].upper())
    if option:
        code = code[: option.start()]
    tree, _ = parse(code)
    if isinstance(tree, (exp.Query, exp.Values)):
        tables = read_tables(tree)
    else:  # unreadable: every qualified name in it, a superset
        tables = qualified_names(tokens[as_ + 1 :])
        verdict.add_reads([SERVER])
    if "(" in code:  # the stored functions the view calls whenever it is read
        verdict.add_calls(judge_text(code, 1).calls or ())
    if tables:
        verdict.add_reason("a view writes through to the tables it reads (UPDATE/INSERT on it)")
    verdict.add_targets(tables)
    verdict.add_reads(tables)


# Storage engines that keep their data in this server's own files for this table.
_LOCAL_ENGINES = frozenset(
    {"INNODB", "XTRADB", "MYISAM", "ARIA", "MARIA", "MEMORY", "HEAP", "CSV", "ARCHIVE"}
    | {"BLACKHOLE", "MRG_MYISAM", "MERGE", "SEQUENCE", "ROCKSDB", "TOKUDB", "COLUMNSTORE"}
    | {"MROONGA"}
)
# Storage engines whose tables are other servers' tables or arbitrary files.
_REMOTE_ENGINES = frozenset(
    {"FEDERATED", "FEDERATEDX", "CONNECT", "SPIDER", "S3", "OQGRAPH", "SPHINX", "NDB"}
    | {"NDBCLUSTER"}
)
_NOT_ENGINE_OPTION = frozenset(
    {"ADD", "COLUMN", "CHANGE", "MODIFY", "DROP", "AFTER", "ALTER", "RENAME", "TO", "AS"}
    | {"BY", "KEY", "INDEX", "FIRST"}
)
_TABLE_QUERY = frozenset({"SELECT", "AS", "WITH", "LIKE", "VALUES", "TABLE"})


def _table_options(tokens: list[Token], index: int, verb: str, verdict: Verdict) -> None:
    """CREATE/ALTER TABLE options that make a table write elsewhere: UNION=(…) of a MERGE
    table (its tables, as written), an engine that stores nothing here (FEDERATED, CONNECT,
    SPIDER, …: another server or any file) or CONNECTION='…', and DATA/INDEX DIRECTORY
    (files outside the data directory) — those last get the server-wide target "*"."""
    _, position = qualified_name(tokens, skip_words(tokens, index, _IF_EXISTS))
    depth = 0
    query_depth = 0  # inside a parenthesised query: its words are no table options
    while position < len(tokens):
        token = tokens[position]
        word = token.word
        position += 1
        if token.kind is PUNCT and word in "()":
            depth += 1 if word == "(" else -1
            if depth < query_depth:
                query_depth = 0
            continue
        if token.kind is not WORD or query_depth:
            continue
        previous = tokens[position - 2].word if position >= 2 else ""
        if word == "DIRECTORY" and previous in ("DATA", "INDEX"):
            verdict.add_reason(f"{previous} DIRECTORY puts table files outside the data directory")
            verdict.add_targets([SERVER])
        if depth and word == "SELECT":
            query_depth = depth
            continue
        if depth and word not in ("ENGINE", "CONNECTION"):
            continue  # a partition's own ENGINE=… or CONNECTION='…' counts (Spider's do)
        if verb == "CREATE" and word in _TABLE_QUERY:
            return  # CREATE TABLE … SELECT: the rest is a query (its tables are only read)
        equals = position < len(tokens) and tokens[position].word == "="
        after = position + 1 if equals else position
        if after >= len(tokens):
            continue
        if word == "UNION" and tokens[after].word == "(":
            names = name_list(tokens, after + 1)
            if names and names[0].name.upper() not in _TABLE_QUERY:
                verdict.add_reason("a MERGE table writes into the tables of its UNION list")
                verdict.add_targets(names)
        elif word == "CONNECTION" and tokens[after].kind in (STRING, QUOTED):
            verdict.add_reason("CONNECTION='…' makes the table another server's table")
            verdict.add_targets([SERVER])
        elif word in ("ENGINE", "TYPE") and previous not in _NOT_ENGINE_OPTION:
            # ENGINE=SPIDER, ENGINE=`SPIDER`, ENGINE='SPIDER' and ENGINE="SPIDER" all name it.
            value = tokens[after]
            engine = value.key if value.is_identifier or value.kind is STRING else ""
            if engine in _LOCAL_ENGINES or not engine:
                continue
            if equals or engine in _REMOTE_ENGINES:  # "ENGINE = x", or a known remote one
                verdict.add_reason(
                    f"ENGINE={engine} keeps the table's data elsewhere (another server or a "
                    "file), not in this schema"
                )
                verdict.add_targets([SERVER])


def _renamed(tokens: list[Token], index: int) -> list[TableRef]:
    """RENAME TABLE a TO b, c TO d: every name on both sides."""
    names: list[TableRef] = []
    while index < len(tokens):
        name, index = qualified_name(tokens, index)
        if name is None:
            break
        names.append(name)
        if index < len(tokens) and tokens[index].word in ("TO", ","):
            index += 1
        else:
            break
    return names


def _renamed_by_alter(tokens: list[Token], index: int) -> list[TableRef]:
    """Every other table an ALTER TABLE clause names: RENAME [TO|AS] other, EXCHANGE
    PARTITION p WITH TABLE other, CONVERT PARTITION p TO TABLE other and CONVERT TABLE
    other TO PARTITION p (MariaDB 10.7+: they move a table into or out of this one), and
    FOREIGN KEY … REFERENCES other (the parent table's definition changes with it)."""
    found: list[TableRef] = []
    for position in range(index, len(tokens)):
        token = tokens[position]
        if token.kind is not WORD:
            continue
        after = position + 1
        following = tokens[after].word if after < len(tokens) else ""
        if token.word == "RENAME":
            if following in ("COLUMN", "INDEX", "KEY"):
                continue
            after = skip_words(tokens, after, frozenset({"TO", "AS"}))
        elif token.word in ("WITH", "TO", "CONVERT") and following == "TABLE":
            after += 1  # WITH TABLE x, TO TABLE x, CONVERT TABLE x
        elif token.word != "REFERENCES":
            continue
        name, _ = qualified_name(tokens, after)
        if name:
            found.append(name)
    return found


def _referenced_tables(tokens: list[Token], index: int) -> list[TableRef]:
    """CREATE TABLE … REFERENCES other (a foreign key ties the parent table to this one;
    ON DELETE/UPDATE CASCADE changes this one whenever the parent changes) and CREATE
    TABLE t LIKE other (it copies other's definition)."""
    found: list[TableRef] = []
    for position in range(index, len(tokens)):
        if tokens[position].kind is WORD and tokens[position].word == "REFERENCES":
            name, _ = qualified_name(tokens, position + 1)
            if name:
                found.append(name)
    return found


# --- SET ------------------------------------------------------------------------------

# Variables that change how transactions behave, or switch off the READ ONLY session the
# bot runs reads in.
_TRANSACTION_VARIABLES = {
    "AUTOCOMMIT": "SET autocommit changes transaction handling: with autocommit=0 every "
    "statement joins an open transaction that holds its locks until COMMIT",
    "COMPLETION_TYPE": "SET completion_type changes what COMMIT and ROLLBACK do",
    "TRANSACTION_READ_ONLY": "SET transaction_read_only can switch off the read-only "
    "session reads run in",
    "TX_READ_ONLY": "SET tx_read_only can switch off the read-only session reads run in",
    "TRANSACTION_ISOLATION": "SET transaction_isolation changes how transactions see data",
    "TX_ISOLATION": "SET tx_isolation changes how transactions see data",
}
_GLOBAL_SCOPES = frozenset({"GLOBAL", "PERSIST", "PERSIST_ONLY"})
_SLOW_LOG = "changes what the slow query log records of the session's statements"
# Session settings that change what is logged or replicated of the statements after them: a
# change that hides itself from replicas, CDC or the server's logs. Refused (bot.guard),
# and they reach the whole server (a stored program's SET of one is refused too).
HIDING_VARIABLES: dict[str, str] = {
    "SQL_LOG_BIN": "keeps the change out of the binary log: replicas, CDC and point-in-time "
    "recovery never see it",
    "SKIP_REPLICATION": "marks the change for replicas to skip",
    "WSREP_ON": "keeps the change from the Galera cluster's other nodes",
    "WSREP_OSU_METHOD": "can apply schema changes on this node only",
    "GTID_SEQ_NO": "rewrites the change's GTID, so replicas may skip it as already applied",
    "GTID_DOMAIN_ID": "moves the change to another replication domain",
    "GTID_NEXT": "gives the change another transaction's GTID",
    "SERVER_ID": "makes the change look like another server's, which that server's replicas skip",
    "PSEUDO_THREAD_ID": "makes the binary log attribute the change to another connection",
    "PSEUDO_SLAVE_MODE": "makes the session behave like a replica applying events",
    "BINLOG_FORMAT": "changes how the change is written to the binary log (what CDC sees)",
    "BINLOG_ROW_IMAGE": "changes which columns the binary log records of each row",
    "BINLOG_ANNOTATE_ROW_EVENTS": "drops the statement's text from the binary log",
    "BINLOG_DIRECT_NON_TRANSACTIONAL_UPDATES": "changes where non-transactional changes are "
    "written in the binary log",
    "SQL_LOG_OFF": "keeps the session's statements out of the general query log",
    "SLOW_QUERY_LOG": _SLOW_LOG,
    "LOG_SLOW_QUERY": _SLOW_LOG,
    "LOG_SLOW_FILTER": _SLOW_LOG,
    "LOG_SLOW_RATE_LIMIT": _SLOW_LOG,
    "LOG_SLOW_VERBOSITY": _SLOW_LOG,
    "LOG_SLOW_QUERY_TIME": _SLOW_LOG,
    "LONG_QUERY_TIME": _SLOW_LOG,
    "LOG_SLOW_MIN_EXAMINED_ROW_LIMIT": _SLOW_LOG,
    "MIN_EXAMINED_ROW_LIMIT": _SLOW_LOG,
    "LOG_QUERIES_NOT_USING_INDEXES": _SLOW_LOG,
    "LOG_SLOW_ADMIN_STATEMENTS": _SLOW_LOG,
}
# Variables that change how the server reads the SQL text after them: quoting and escapes
# (sql_mode: ANSI_QUOTES, NO_BACKSLASH_ESCAPES, ORACLE, …) and the bytes' character set.
_READING_VARIABLES = frozenset(
    {"SQL_MODE", "CHARACTER_SET_CLIENT", "CHARACTER_SET_CONNECTION", "CHARSET", "NAMES"}
)


def _set(piece: Piece, first: str, depth: int) -> Verdict:
    tokens = tokenize(piece)
    second = tokens[1].word if len(tokens) > 1 else ""
    third = tokens[2].word if len(tokens) > 2 else ""
    if second == "STATEMENT":
        verdict = Verdict(
            Risk.WRITE, "SET STATEMENT", "SET STATEMENT changes session variables for a statement"
        )
        at = find_word(tokens, "FOR", 2)
        if at < 0 or at + 1 >= len(tokens):
            verdict.kind = "UNKNOWN"
            verdict.add_reason("SET STATEMENT without FOR <statement>")
            return verdict
        _judge_variables(tokens, 2, at, verdict)
        verdict.absorb(judge_text(piece.text[tokens[at + 1].start :], depth + 1), "the statement: ")
        return verdict
    if second == "TRANSACTION" or (
        second in ("GLOBAL", "SESSION", "LOCAL") and third == "TRANSACTION"
    ):
        return Verdict(
            Risk.TRANSACTION,
            "SET TRANSACTION",
            "SET TRANSACTION changes the isolation level or read-only mode of transactions",
        )
    if second == "PASSWORD" or (second == "DEFAULT" and third == "ROLE"):
        kind = "SET PASSWORD" if second == "PASSWORD" else "SET DEFAULT ROLE"
        verdict = Verdict(Risk.DDL, kind, f"{kind} changes an account, server-wide")
        verdict.add_targets([SERVER])
        return verdict
    verdict = Verdict(Risk.WRITE, "SET", _set_reason(second))
    _judge_variables(tokens, 1, len(tokens), verdict)
    if second in ("NAMES", "CHARACTER", "CHARSET"):
        verdict.changes_reading = True
    return verdict


def _judge_variables(tokens: list[Token], start: int, stop: int, verdict: Verdict) -> None:
    """Every name among ``tokens[start:stop]`` that is a transaction setting or a global
    scope, quoted or not (`` `autocommit` `` and ``@@session.`autocommit` `` are the same
    variable as ``autocommit``). Values are scanned too: a superset, failing closed."""
    _judge_engine_settings(tokens, start, stop, verdict)
    for scope, name in _variable_names(tokens, start, stop):
        why = _TRANSACTION_VARIABLES.get(name)
        if why is not None:
            verdict.at_least(Risk.TRANSACTION, why)
        if name in _READING_VARIABLES:
            verdict.changes_reading = True
        hides = HIDING_VARIABLES.get(name)
        if hides is not None:
            verdict.add_reason(f"{name.lower()} {hides}")
            verdict.add_targets([SERVER])
        if name in _GLOBAL_SCOPES or scope in _GLOBAL_SCOPES:
            verdict.add_reason("it changes a server-wide setting, for every connection")
            verdict.add_targets([SERVER])


# The engine a CREATE TABLE without ENGINE= gets: SET STATEMENT default_storage_engine=SPIDER
# FOR CREATE TABLE x (…) makes x another server's table without naming the engine.
_ENGINE_VARIABLES = frozenset(
    {"DEFAULT_STORAGE_ENGINE", "DEFAULT_TMP_STORAGE_ENGINE", "STORAGE_ENGINE"}
    | {"ENFORCE_STORAGE_ENGINE"}
)


def _judge_engine_settings(tokens: list[Token], start: int, stop: int, verdict: Verdict) -> None:
    """An engine setting whose value is not a known local engine reaches the whole server."""
    for position in range(start, stop):
        token = tokens[position]
        name = token.key if token.is_identifier else token.word.rsplit(".", 1)[-1].lstrip("@")
        if name not in _ENGINE_VARIABLES:
            continue
        after = position + 1
        if after < stop and tokens[after].word in ("=", ":="):
            after += 1
        value = tokens[after].key if after < stop else ""
        if value not in _LOCAL_ENGINES and value != "DEFAULT":
            verdict.add_reason(
                f"{name.lower()} = {value or '?'} may make new tables another server's tables "
                "or files"
            )
            verdict.add_targets([SERVER])


def _variable_names(tokens: list[Token], start: int, stop: int) -> list[tuple[str, str]]:
    """(scope, name), unquoted and upper-cased, for every identifier and @@variable."""
    found: list[tuple[str, str]] = []
    index = start
    while index < stop:
        token = tokens[index]
        index += 1
        if token.is_identifier:
            found.append(("", token.key))
            continue
        if token.kind is not VARIABLE or not token.word.startswith("@@"):
            continue  # @user_variable: its name is the user's, not a server setting
        written = token.name[2:]
        parts = [unquote(written)] if written[:1] in "`'\"" and written else written.split(".")
        if parts[-1] == "" and index < stop and tokens[index].is_identifier:
            parts[-1] = tokens[index].name  # @@session.`autocommit`
            index += 1
        elif (
            len(parts) == 1
            and index + 1 < stop
            and tokens[index].word == "."
            and tokens[index + 1].is_identifier
        ):
            parts.append(tokens[index + 1].name)  # @@`session`.autocommit
            index += 2
        names = [unquote(part) if part[:1] in "`'\"" else part for part in parts]
        scope = names[0].upper() if len(names) > 1 else ""
        found.append((scope, names[-1].upper()))
    return found


# Session settings that change the statements sent after them: how the server reads them
# (_READING_VARIABLES, and the collation literals compare by), or what they reach: without
# foreign key checks no cascade the card showed fires, and rows of other schemas are left
# pointing at rows that are gone.
_CHECKING_VARIABLES = frozenset({"FOREIGN_KEY_CHECKS", "UNIQUE_CHECKS", "CHECK_CONSTRAINT_CHECKS"})
_LATER_STATEMENT_VARIABLES = _READING_VARIABLES | {"COLLATION_CONNECTION"} | _CHECKING_VARIABLES


def switches_checks(sql: str) -> str | None:
    """For SET STATEMENT foreign_key_checks=… FOR …, the setting: its own statement then runs
    without the checks (no cascade the card showed fires); else None."""
    for piece in split(unwrap_executable_comments(sql)):
        tokens = tokenize(piece)
        if len(tokens) < 2 or tokens[0].word != "SET" or tokens[1].word != "STATEMENT":
            continue
        at = find_word(tokens, "FOR", 2)
        for _, name in _variable_names(tokens, 2, at if at > 0 else len(tokens)):
            if name in _CHECKING_VARIABLES:
                return name
    return None


def hides_itself(sql: str) -> tuple[str, str] | None:
    """For a SET (or SET STATEMENT … FOR) of a setting that changes what is logged or
    replicated (HIDING_VARIABLES, however spelt: @@, session., backquotes), the setting's
    name and what it does; else None."""
    for piece in split(unwrap_executable_comments(sql)):
        tokens = tokenize(piece)
        if not tokens or tokens[0].word != "SET":
            continue
        stop = len(tokens)
        if len(tokens) > 1 and tokens[1].word == "STATEMENT":
            at = find_word(tokens, "FOR", 2)
            stop = at if at > 0 else stop
        for _, name in _variable_names(tokens, 1, stop):
            if name in HIDING_VARIABLES:
                return name.lower(), HIDING_VARIABLES[name]
    return None


def changes_how_sql_is_read(sql: str) -> str | None:
    """For a SET statement that changes how the server reads (or checks) later statements,
    the setting (``sql_mode``, ``NAMES``, ``CHARACTER SET``, ``foreign_key_checks`` …); else
    None. SET STATEMENT … FOR is not one: its statement is read before the setting applies."""
    for piece in split(unwrap_executable_comments(sql)):
        tokens = tokenize(piece)
        if not tokens or tokens[0].word != "SET":
            continue
        if len(tokens) > 1 and tokens[1].word == "STATEMENT":
            continue
        words = [token.key for token in tokens]
        if any(a == "CHARACTER" and b == "SET" for a, b in pairwise(words)):
            return "CHARACTER SET"
        for _, name in _variable_names(tokens, 1, len(tokens)):
            if name in _LATER_STATEMENT_VARIABLES:
                return name
    return None


def _set_reason(second: str) -> str:
    if second == "ROLE":
        return "SET ROLE changes the session's active roles and so its privileges"
    if second in ("NAMES", "CHARACTER", "CHARSET"):
        return "SET NAMES changes the session's character set"
    return "SET changes session or server variables, state that outlives the statement"


# --- transaction control --------------------------------------------------------------


def _transaction(piece: Piece, first: str, depth: int) -> Verdict:
    tokens = tokenize(piece)
    second = tokens[1].word if len(tokens) > 1 else ""
    if first == "START" and second != "TRANSACTION":
        return _admin(piece, first, depth)
    if first in ("LOCK", "UNLOCK") and second not in ("TABLE", "TABLES"):
        return _admin(piece, first, depth)
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


# --- everything else that is never read-only --------------------------------------------

_ADMIN_REASONS = {
    "USE": "USE switches the default database, so later unqualified names point elsewhere",
    "CALL": "CALL runs a stored procedure, which can do anything its body does",
    "DEALLOCATE": "DEALLOCATE PREPARE drops a prepared statement (session state)",
    "DO": "DO evaluates expressions only for their side effects",
    "HANDLER": "HANDLER opens a low-level cursor on a table that stays open in the session",
    "LOAD": "LOAD DATA / LOAD XML inserts rows read from a file",
    "LOAD INDEX": "LOAD INDEX INTO CACHE preloads a key cache (server-wide)",
    "EXECUTE IMMEDIATE": "EXECUTE IMMEDIATE runs the statement it is given",
    "KILL": "KILL ends another connection or its running statement",
    "FLUSH": "FLUSH reloads or empties server caches, logs or privileges "
    "(FLUSH TABLES WITH READ LOCK blocks every write)",
    "RESET": "RESET clears server state such as binary logs or replication settings",
    "PURGE": "PURGE BINARY LOGS deletes binary log files",
    "SHUTDOWN": "SHUTDOWN stops the database server",
    "RESTART": "RESTART restarts the database server",
    "INSTALL": "INSTALL loads a plugin: code that runs inside the server",
    "UNINSTALL": "UNINSTALL unloads a server plugin",
    "CHANGE": "CHANGE MASTER / CHANGE REPLICATION SOURCE reconfigures replication",
    "START": "START SLAVE / START REPLICA starts replication",
    "STOP": "STOP SLAVE / STOP REPLICA stops replication",
    "BINLOG": "BINLOG replays binary-log events, which can change anything",
    "CACHE": "CACHE INDEX assigns indexes to a key cache (server-wide)",
    "OPTIMIZE": "OPTIMIZE TABLE rebuilds tables and locks them meanwhile",
    "REPAIR": "REPAIR TABLE rewrites table files",
    "CHECK": "CHECK TABLE locks tables and can mark them as crashed",
    "CHECKSUM": "CHECKSUM TABLE reads whole tables under a lock",
    "ANALYZE": "ANALYZE TABLE rewrites index statistics and locks the table",
    "HELP": "HELP is a server help command, not a query; not known to be read-only",
    "SIGNAL": "SIGNAL raises an error condition (a stored-program statement)",
    "RESIGNAL": "RESIGNAL raises an error condition (a stored-program statement)",
    "GET": "GET DIAGNOSTICS is a stored-program statement",
    "IMPORT": "IMPORT TABLE creates tables from data files",
    "CLONE": "CLONE copies or replaces a whole data directory",
    "BACKUP": "BACKUP STAGE / BACKUP LOCK blocks writes server-wide for a backup",
    "LOCK": "LOCK INSTANCE FOR BACKUP blocks DDL server-wide",
    "UNLOCK": "UNLOCK INSTANCE releases a server-wide backup lock",
    "PREPARE": "PREPARE stores a statement for EXECUTE",
    "EXECUTE": "EXECUTE runs a prepared statement (judged when it was prepared)",
}
_SERVER_WIDE = frozenset(  # reported with the target "*.*": they act on the whole server
    {"KILL", "FLUSH", "RESET", "PURGE", "SHUTDOWN", "RESTART", "INSTALL", "UNINSTALL"}
    | {"CHANGE", "START", "STOP", "BINLOG", "CACHE", "CLONE", "BACKUP", "LOCK", "UNLOCK"}
)
_TABLE_ADMIN = frozenset({"OPTIMIZE", "REPAIR", "CHECK", "CHECKSUM", "ANALYZE"})
# MariaDB commits the open transaction before these (CHECKSUM TABLE does not).
_COMMITS_IMPLICITLY = frozenset({"OPTIMIZE", "REPAIR", "CHECK", "ANALYZE"})
_KIND_SECOND = frozenset(
    {"TABLE", "DATA", "XML", "INDEX", "MASTER", "SLAVE", "REPLICA", "REPLICATION", "PLUGIN"}
    | {"SONAME", "BINARY", "QUERY", "CONNECTION", "PREPARE", "DIAGNOSTICS", "STAGE"}
    | {"INSTANCE", "IMMEDIATE", "ALL", "GROUP_REPLICATION", "PRIVILEGES", "LOGS", "TABLES"}
)


def _admin(piece: Piece, first: str, depth: int) -> Verdict:
    tokens = tokenize(piece)
    second = tokens[1].word if len(tokens) > 1 else ""
    kind = first
    if second in _KIND_SECOND:
        kind = f"{first} {'TABLE' if second == 'TABLES' and first in _TABLE_ADMIN else second}"
    verdict = Verdict(Risk.WRITE, kind, _ADMIN_REASONS.get(kind) or _ADMIN_REASONS[first])
    if first in _SERVER_WIDE:
        verdict.add_targets([SERVER])
    elif first == "USE" and len(tokens) > 1 and tokens[1].is_identifier:
        verdict.add_targets([whole_schema(tokens[1].name)])
    elif first in ("CALL", "HANDLER"):
        name, _ = qualified_name(tokens, 1)
        verdict.add_targets([name] if name else [])
        if name is None:
            verdict.kind = "UNKNOWN"
            verdict.add_reason(f"the {first} names nothing the classifier can read")
            verdict.add_reads([SERVER])
        elif first == "CALL":
            verdict.add_calls([name])  # the guard reads its body from the server
        else:
            verdict.add_reads([name])  # HANDLER t READ … reads rows of t
    elif first in _TABLE_ADMIN:
        index = skip_words(tokens, 1, frozenset({"NO_WRITE_TO_BINLOG", "LOCAL", "TABLE", "TABLES"}))
        verdict.add_targets(name_list(tokens, index))
        if first in _COMMITS_IMPLICITLY:
            # Inside an approved call's transaction it would commit the changes before it,
            # which a later rollback then cannot undo: DDL's rules (run alone) apply.
            verdict.at_least(Risk.DDL, f"{first} TABLE commits any open transaction implicitly")
    elif first == "LOAD":
        _load_targets(tokens, verdict)
    elif first in ("PREPARE", "EXECUTE"):
        verdict.dynamic = True  # a stored program running it runs SQL never judged here
        _prepared_text(piece, tokens, first, verdict, depth)
    return verdict


def _load_targets(tokens: list[Token], verdict: Verdict) -> None:
    if len(tokens) > 1 and tokens[1].word == "INDEX":
        verdict.add_targets([SERVER])
        return
    into = find_word(tokens, "INTO")
    if into >= 0:
        name, _ = qualified_name(tokens, skip_words(tokens, into + 1, frozenset({"TABLE"})))
        verdict.add_targets([name] if name else [])
    # INFILE reads the server's file system, LOCAL INFILE the client's (the bot's host).
    verdict.add_reason("it reads a file from the database server (or, LOCAL, from the bot's host)")
    verdict.add_targets([SERVER])


def _prepared_text(
    piece: Piece, tokens: list[Token], first: str, verdict: Verdict, depth: int
) -> None:
    """PREPARE s FROM '…' and EXECUTE IMMEDIATE '…' carry their statement as a literal: judge
    it. From a variable or an expression the statement cannot be seen, so it is given the
    highest risk (the guard refuses it everywhere)."""
    if first == "PREPARE":
        at = find_word(tokens, "FROM")
    elif len(tokens) > 1 and tokens[1].word == "IMMEDIATE":
        at = 1
    else:
        return  # EXECUTE s [USING …]: runs what PREPARE stored, judged then
    literals: list[str] = []
    index = at + 1 if at >= 0 else len(tokens)
    while index < len(tokens) and _is_literal(piece, tokens[index]):
        literals.append(piece.text[tokens[index].start : tokens[index].end])
        index += 1
    if not literals or index != len(tokens):
        verdict.at_least(
            Risk.TRANSACTION,
            f"{verdict.kind} takes its statement from a variable or expression, which cannot "
            "be checked",
        )
        return
    text = "".join(_unescape(literal) for literal in literals)
    verdict.absorb(judge_text(text, depth + 1), prefix="the prepared statement: ")


def texts_it_runs(sql: str, depth: int = 0) -> list[str]:
    """``sql`` and every statement it hands the server as text to run: the literal of
    EXECUTE IMMEDIATE '…' and PREPARE s FROM '…', nested ones too (a few levels deep)."""
    texts = [sql]
    if depth > 3:
        return texts
    for piece in split(sql):
        tokens = tokenize(piece)
        first = tokens[0].word if tokens else ""
        if first == "PREPARE":
            at = find_word(tokens, "FROM")
        elif first == "EXECUTE" and len(tokens) > 1 and tokens[1].word == "IMMEDIATE":
            at = 1
        else:
            continue
        index = at + 1 if at >= 0 else len(tokens)
        literals: list[str] = []
        while index < len(tokens) and _is_literal(piece, tokens[index]):
            literals.append(piece.text[tokens[index].start : tokens[index].end])
            index += 1
        if literals:
            inner = "".join(_unescape(literal) for literal in literals)
            texts.extend(texts_it_runs(inner, depth + 1))
    return texts


def _is_literal(piece: Piece, token: Token) -> bool:
    """'…', or "…" (a literal unless the server runs with ANSI_QUOTES)."""
    return token.kind is STRING or (token.kind is QUOTED and piece.text[token.start] == '"')


_STRING_ESCAPES = {"0": "\0", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a"}


def _unescape(literal: str) -> str:
    """The value of a '…' or "…" literal: doubled quotes and backslash escapes undone."""
    quote = literal[0]
    body = literal[1:-1] if len(literal) > 1 and literal.endswith(quote) else literal[1:]
    parts = re.split(r"(\\.|" + re.escape(quote * 2) + ")", body, flags=re.S)
    out: list[str] = []
    for part in parts:
        if part == quote * 2:
            out.append(quote)
        elif len(part) == 2 and part[0] == "\\":
            char = part[1]
            out.append(_STRING_ESCAPES.get(char, part if char in "%_" else char))
        else:
            out.append(part)
    return "".join(out)


_Handler = Callable[[Piece, str, int], Verdict]

# Queries, SHOW and DML report their calls, targets and reads themselves.
_JUDGE_THEIR_OWN_REACH: frozenset[_Handler] = frozenset({_query, _show, _dml})
# Statements whose reads come from their own parse or from the statement they hold.
_KINDS_WITH_OWN_READS = frozenset(
    {"INSERT", "REPLACE", "UPDATE", "DELETE", "EXPLAIN", "EXPLAIN ANALYZE", "ANALYZE"}
    | {"DESCRIBE", "SET STATEMENT", "PREPARE", "EXECUTE IMMEDIATE"}
    | {f"{verb} {obj}" for verb in ("CREATE", "ALTER") for obj in _PROGRAMS | {"VIEW"}}
)

_HANDLERS: dict[str, _Handler] = {
    **dict.fromkeys(("SELECT", "WITH", "(", "TABLE", "VALUES"), _query),
    "SHOW": _show,
    **dict.fromkeys(("DESCRIBE", "DESC", "EXPLAIN"), _explain),
    "ANALYZE": _analyze,
    **dict.fromkeys(("INSERT", "REPLACE", "UPDATE", "DELETE"), _dml),
    **dict.fromkeys(("CREATE", "ALTER", "DROP", "RENAME", "TRUNCATE", "GRANT", "REVOKE"), _ddl),
    "SET": _set,
    **dict.fromkeys(
        ("BEGIN", "START", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE", "XA", "LOCK", "UNLOCK"),
        _transaction,
    ),
    **dict.fromkeys(
        (name for name in _ADMIN_REASONS if name not in ("START", "LOCK", "UNLOCK", "ANALYZE")),
        _admin,
    ),
}
