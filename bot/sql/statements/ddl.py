"""DDL (CREATE, ALTER, DROP, RENAME, TRUNCATE, GRANT, REVOKE): what it makes, changes or
drops, and whether that lives in a schema or on the whole server."""

from __future__ import annotations

from bot.sql.lexical import Piece
from bot.sql.risk import Risk, TableRef
from bot.sql.statements.admin import admin_statement
from bot.sql.statements.programs import (
    reached_by_ddl,
    referenced_tables,
    renamed_by_alter,
    renamed_tables,
)
from bot.sql.statements.words import IF_EXISTS
from bot.sql.tokens import (
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
)
from bot.sql.verdict import SERVER, Verdict, whole_schema

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
_DDL_WHAT = {
    "CREATE": "creates",
    "ALTER": "changes",
    "DROP": "deletes",
    "RENAME": "renames",
}


def ddl_statement(piece: Piece, first: str, depth: int) -> Verdict:
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
        return admin_statement(piece, "DEALLOCATE", depth)
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
        reached_by_ddl(piece, tokens, first, obj, index, verdict, depth)
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
    index = skip_words(tokens, index, IF_EXISTS)
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
        return renamed_tables(tokens, index)
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
        targets += renamed_by_alter(tokens, after)
    elif obj == "TABLE" and verb == "CREATE":
        targets += referenced_tables(tokens, after)
    elif obj == "FUNCTION" and find_word(tokens, "SONAME", after) >= 0:
        targets.append(SERVER)  # a loadable function: a shared library loaded into the server
    elif obj == "EVENT" and verb == "ALTER":
        rename = find_word(tokens, "RENAME", after)
        renamed, _ = qualified_name(tokens, rename + 2) if rename >= 0 else (None, 0)
        if renamed:
            targets.append(renamed)  # ALTER EVENT e RENAME TO other.e moves it
    return targets
