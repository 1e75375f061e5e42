"""Statements that would switch the session's database role.

The bot sets the role of every session itself, from `[databases.access]`; a statement that
switches it (`SET ROLE`, `SET DEFAULT ROLE`) is refused whoever sends it, so that the model
can never read with privileges its requester does not hold.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.sql.lexical import Piece, split
from bot.sql.tokens import tokenize


def switches_role(sql: str | Sequence[Piece]) -> bool:
    """Whether any statement of `sql` is SET ROLE or SET DEFAULT ROLE (executable comments
    read with their content in place). `sql` is the text, or the statements the classifier
    already cut it into (Classification.pieces)."""
    for piece in split(sql) if isinstance(sql, str) else sql:
        words = [token.word for token in tokenize(piece, 3)]
        if words[:2] == ["SET", "ROLE"] or words[:3] == ["SET", "DEFAULT", "ROLE"]:
            return True
        if piece.executable_comment and "ROLE" in piece.text.upper():
            return True
    return False
