"""Reading `SHOW GRANTS` lines: which privileges an account holds, and on what.

Used by `dbagent check` to warn about an account that can do more than the bot needs. Lines
it cannot read are reported as such rather than guessed at; privileges that reach the account
through roles are not expanded (the role's own grants are not in the list).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SHOW_GRANTS = "SHOW GRANTS"

_GRANT = re.compile(
    r"^GRANT\s+(?P<privileges>.+?)\s+ON\s+"
    r"(?:(?:TABLE|FUNCTION|PROCEDURE|PACKAGE\s+BODY|PACKAGE)\s+)?"
    r"(?P<object>(?:`(?:[^`]|``)*`|[^\s.`]+)(?:\.(?:`(?:[^`]|``)*`|[^\s.`]+))?)\s+TO\s",
    re.IGNORECASE | re.DOTALL,
)
_ROLE_GRANT = re.compile(r"^GRANT\s+(?!.*\sON\s)(?P<roles>.+?)\s+TO\s", re.IGNORECASE | re.DOTALL)

# Privileges that let an account change data, schema or server state.
WRITE_PRIVILEGES = frozenset(
    {
        "ALL",
        "INSERT",
        "UPDATE",
        "DELETE",
        "DELETE HISTORY",
        "CREATE",
        "DROP",
        "ALTER",
        "INDEX",
        "REFERENCES",
        "CREATE VIEW",
        "CREATE TEMPORARY TABLES",
        "LOCK TABLES",
        "TRIGGER",
        "EVENT",
        "CREATE ROUTINE",
        "ALTER ROUTINE",
        "EXECUTE",
    }
)
# Privileges on tables: held server-wide, any of them shows every foreign key.
TABLE_PRIVILEGES = frozenset(
    {
        "SELECT",
        "INSERT",
        "UPDATE",
        "DELETE",
        "CREATE",
        "DROP",
        "REFERENCES",
        "INDEX",
        "ALTER",
        "CREATE VIEW",
        "SHOW VIEW",
        "TRIGGER",
        "DELETE HISTORY",
    }
)
# Privileges over the whole server that the bot never needs.
SERVER_PRIVILEGES = frozenset({"ALL", "SUPER", "FILE", "PROCESS", "SHUTDOWN"})


@dataclass(frozen=True, slots=True)
class GrantLine:
    privileges: frozenset[str]  # upper case, column lists dropped; ALL PRIVILEGES is ALL
    schema: str  # "*" for every schema
    table: str  # "*" for every table of the schema
    text: str  # the line as the server wrote it

    @property
    def is_global(self) -> bool:
        return self.schema == "*"

    def covers_schema(self, schema: str, *, fold_case: bool) -> bool:
        """Whether the grant applies to the whole of `schema` (or every schema)."""
        if self.table != "*":
            return False
        return self.is_global or _schema_matches(self.schema, schema, fold_case=fold_case)

    def touches_schema(self, schema: str, *, fold_case: bool) -> bool:
        """Whether the grant applies to `schema` or anything in it."""
        return self.is_global or _schema_matches(self.schema, schema, fold_case=fold_case)


@dataclass(frozen=True, slots=True)
class Grants:
    lines: tuple[GrantLine, ...]
    roles: tuple[str, ...]  # roles granted to the account (their privileges are not listed)
    unread: tuple[str, ...]  # lines this reader could not make sense of

    def held_on(self, schema: str, *, fold_case: bool) -> frozenset[str]:
        """Privileges the account holds on the whole schema (directly or globally)."""
        held: set[str] = set()
        for line in self.lines:
            if line.covers_schema(schema, fold_case=fold_case):
                held |= line.privileges
        return frozenset(held)

    def anywhere_in(self, schema: str, *, fold_case: bool) -> frozenset[str]:
        """Privileges on the schema or any of its tables or columns."""
        held: set[str] = set()
        for line in self.lines:
            if line.touches_schema(schema, fold_case=fold_case):
                held |= line.privileges
        return frozenset(held)

    def server_wide(self) -> frozenset[str]:
        held: set[str] = set()
        for line in self.lines:
            if line.is_global:
                held |= line.privileges
        return frozenset(held)


def read_grants(texts: list[str]) -> Grants:
    lines: list[GrantLine] = []
    roles: list[str] = []
    unread: list[str] = []
    for text in texts:
        parsed = _read_line(text)
        if parsed is not None:
            lines.append(parsed)
            continue
        role = _ROLE_GRANT.match(text.strip())
        if role:
            roles.extend(_unquote(part.strip()) for part in _split_outside_parens(role["roles"]))
        else:
            unread.append(text)
    return Grants(tuple(lines), tuple(roles), tuple(unread))


def _read_line(text: str) -> GrantLine | None:
    match = _GRANT.match(text.strip())
    if match is None:
        return None
    privileges: set[str] = set()
    for part in _split_outside_parens(match["privileges"]):
        name = " ".join(re.sub(r"\(.*\)", "", part).split()).upper()
        if name in ("ALL", "ALL PRIVILEGES"):
            name = "ALL"
        if name:
            privileges.add(name)
    schema_text, _, table_text = match["object"].partition(".")
    if not table_text:  # `ON t` names a table of the default schema; treat as unknown schema
        schema_text, table_text = "?", schema_text
    return GrantLine(
        privileges=frozenset(privileges),
        schema=_unquote(schema_text),
        table=_unquote(table_text),
        text=text,
    )


def _split_outside_parens(text: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth = max(0, depth - 1)
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return [part.strip() for part in parts if part.strip()]


def _unquote(name: str) -> str:
    name = name.strip()
    if len(name) >= 2 and name[0] == name[-1] and name[0] in "`'\"":
        quote = name[0]
        return name[1:-1].replace(quote * 2, quote)
    return name


def _schema_matches(pattern: str, schema: str, *, fold_case: bool) -> bool:
    """A schema-level grant may use LIKE wildcards (`shop\\_%`); `\\_` is a literal _."""
    regex = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\" and index + 1 < len(pattern):
            regex.append(re.escape(pattern[index + 1]))
            index += 2
            continue
        regex.append(".*" if char == "%" else "." if char == "_" else re.escape(char))
        index += 1
    flags = re.IGNORECASE if fold_case else 0
    return re.fullmatch("".join(regex), schema, flags) is not None
