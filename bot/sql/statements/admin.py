"""Everything else, never read-only: administration, LOAD, and the text PREPARE and EXECUTE
run."""

from __future__ import annotations

import re

from bot.sql import statements
from bot.sql.lexical import Piece, split
from bot.sql.risk import Risk
from bot.sql.tokens import (
    QUOTED,
    STRING,
    Token,
    find_word,
    name_list,
    qualified_name,
    skip_words,
    tokenize,
)
from bot.sql.verdict import SERVER, Verdict, whole_schema

ADMIN_REASONS: dict[str, str] = {
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


def admin_statement(piece: Piece, first: str, depth: int) -> Verdict:
    tokens = tokenize(piece)
    second = tokens[1].word if len(tokens) > 1 else ""
    kind = first
    if second in _KIND_SECOND:
        kind = f"{first} {'TABLE' if second == 'TABLES' and first in _TABLE_ADMIN else second}"
    verdict = Verdict(Risk.WRITE, kind, ADMIN_REASONS.get(kind) or ADMIN_REASONS[first])
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
    verdict.absorb(statements.judge_text(text, depth + 1), prefix="the prepared statement: ")


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
