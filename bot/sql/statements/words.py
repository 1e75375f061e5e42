"""Keyword sets more than one family of statements reads."""

from __future__ import annotations

# The leading keyword is never a call (DO (SELECT …)).
CALLED_NAME = frozenset({0})
IF_EXISTS = frozenset({"IF", "NOT", "EXISTS"})
