"""The operation a statement performs, as one bounded word (SELECT, UPDATE, …) for traces:
never the statement's text, whose literals may be personal data."""

from __future__ import annotations

import re

from bot.sql.lexical import split, upper_masked

OTHER = "OTHER"
KNOWN = frozenset(
    {
        "ALTER", "ANALYZE", "BEGIN", "CALL", "CHECK", "COMMIT", "CREATE", "DELETE", "DESC",
        "DESCRIBE", "DO", "DROP", "EXPLAIN", "GRANT", "HANDLER", "INSERT", "KILL", "LOCK",
        "OPTIMIZE", "RELEASE", "RENAME", "REPLACE", "REVOKE", "ROLLBACK", "SAVEPOINT",
        "SELECT", "SET", "SHOW", "START", "TABLE", "TRUNCATE", "UNLOCK", "UPDATE", "USE",
        "VALUES", "WITH", "XA",
    }
)  # fmt: skip
_FIRST_WORD = re.compile(r"[\s(]*([A-Z]+)")


def operation_name(sql: str) -> str:
    """The first keyword of the first statement when it is a known one, else OTHER."""
    pieces = split(sql)
    if not pieces:
        return OTHER
    match = _FIRST_WORD.match(upper_masked(pieces[0]))
    word = match.group(1) if match else OTHER
    return word if word in KNOWN else OTHER
