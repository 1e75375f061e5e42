"""SQL safety: the risk classifier (bot.sql.risk) and its lexical and parsing helpers."""

from bot.sql.risk import Classification, Risk, Statement, TableRef, classify
from bot.sql.routines import classify_routine_body

__all__ = ["Classification", "Risk", "Statement", "TableRef", "classify", "classify_routine_body"]
