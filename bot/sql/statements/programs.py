"""What CREATE and ALTER reach beyond the object they name: a stored program's body, a view's
query, a table's engine and options, the tables it renames or references."""

from __future__ import annotations

import re

from sqlglot import exp

from bot.sql import statements
from bot.sql.lexical import Piece
from bot.sql.queries import (
    parse,
)
from bot.sql.risk import Risk, TableRef
from bot.sql.statements.words import IF_EXISTS
from bot.sql.targets import (
    qualified_names,
    read_tables,
)
from bot.sql.tokens import (
    PUNCT,
    QUOTED,
    STRING,
    WORD,
    Token,
    find_word,
    name_list,
    qualified_name,
    skip_words,
)
from bot.sql.verdict import SERVER, Verdict


def reached_by_ddl(
    piece: Piece, tokens: list[Token], verb: str, obj: str, index: int, verdict: Verdict, depth: int
) -> None:
    """Tables, schemas and server resources a created or altered object writes later: a
    stored program's body, a view's tables, a MERGE table's union, a remote or file-backed
    storage engine. They become targets, so the guard's own-schema rule sees them now."""
    if obj in PROGRAMS:
        _program_body(piece, tokens, verb, obj, index, verdict, depth)
    elif obj == "VIEW":
        _view_tables(piece, tokens, index, verdict)
    elif obj == "TABLE":
        _table_options(tokens, index, verb, verdict)
        if verb == "CREATE":
            _, like = qualified_name(tokens, skip_words(tokens, index, IF_EXISTS))
            if like < len(tokens) and tokens[like].word == "(":
                like += 1  # CREATE TABLE t (LIKE u)
            if like < len(tokens) and tokens[like].word == "LIKE":
                source, _ = qualified_name(tokens, like + 1)
                verdict.add_reads([source] if source else [SERVER])


PROGRAMS = frozenset({"TRIGGER", "EVENT", "PROCEDURE", "FUNCTION", "PACKAGE"})
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
    absorb_body(verdict, statements.judge_text(body, depth + 1), f"the {obj.lower()}'s body")


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
    _, after = qualified_name(tokens, skip_words(tokens, index, IF_EXISTS))
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
    _, after = qualified_name(tokens, skip_words(tokens, index, IF_EXISTS))
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
        verdict.add_calls(statements.judge_text(code, 1).calls or ())
    if tables:
        verdict.add_reason("a view writes through to the tables it reads (UPDATE/INSERT on it)")
    verdict.add_targets(tables)
    verdict.add_reads(tables)


# Storage engines that keep their data in this server's own files for this table.
LOCAL_ENGINES = frozenset(
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
    _, position = qualified_name(tokens, skip_words(tokens, index, IF_EXISTS))
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
            if engine in LOCAL_ENGINES or not engine:
                continue
            if equals or engine in _REMOTE_ENGINES:  # "ENGINE = x", or a known remote one
                verdict.add_reason(
                    f"ENGINE={engine} keeps the table's data elsewhere (another server or a "
                    "file), not in this schema"
                )
                verdict.add_targets([SERVER])


def renamed_tables(tokens: list[Token], index: int) -> list[TableRef]:
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


def renamed_by_alter(tokens: list[Token], index: int) -> list[TableRef]:
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


def referenced_tables(tokens: list[Token], index: int) -> list[TableRef]:
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
