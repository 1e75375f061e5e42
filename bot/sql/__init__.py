"""SQL safety: the risk classifier (bot.sql.risk) and its lexical and parsing helpers."""

from bot.sql.risk import Classification, Risk, Statement, TableRef, classify

__all__ = ["Classification", "Risk", "Statement", "TableRef", "classify"]
