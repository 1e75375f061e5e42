"""SET: session and server variables, what changes how later statements are read, logged,
replicated or checked, and SET STATEMENT … FOR."""

from __future__ import annotations

from itertools import pairwise

from bot.sql import statements
from bot.sql.lexical import Piece, split, unwrap_executable_comments
from bot.sql.risk import Risk
from bot.sql.statements.programs import LOCAL_ENGINES
from bot.sql.tokens import (
    VARIABLE,
    Token,
    find_word,
    tokenize,
    unquote,
)
from bot.sql.verdict import SERVER, Verdict

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


def set_statement(piece: Piece, first: str, depth: int) -> Verdict:
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
        verdict.absorb(
            statements.judge_text(piece.text[tokens[at + 1].start :], depth + 1), "the statement: "
        )
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
        if value not in LOCAL_ENGINES and value != "DEFAULT":
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
