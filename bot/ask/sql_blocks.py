"""Find the SQL an answer proposes: fenced code blocks, and the database each one targets.

Ask mode executes nothing, so an answer's SQL would be a dead end; Slack gives each block Run
and Edit & run buttons. A block counts as SQL when it is fenced as ```sql (or mysql/mariadb),
or when an unlabelled block is text the classifier reads as SQL statements. A block longer
than `max_sql_chars` gets no buttons (running it would be refused), and a long answer is
searched on a worker thread: classifying megabytes would hold every thread's event loop.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass

from bot.config import Limits
from bot.sql.lexical import trim_sql
from bot.sql.risk import classify

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n(.*?)```", re.DOTALL)
_SQL_LABELS = frozenset({"sql", "mysql", "mariadb"})
_MAX_SQL_CHARS = Limits().max_sql_chars
_INLINE_CHARS = 4_000  # answers up to this long are searched on the event loop


@dataclass(frozen=True, slots=True)
class SqlBlock:
    sql: str
    database: str | None  # None: the answer does not say; the person picks one
    start: int  # offsets of the whole fenced block in the answer text
    end: int


def _looks_like_sql(text: str) -> bool:
    classification = classify(text)
    return bool(classification.statements) and all(
        statement.kind != "UNKNOWN" for statement in classification.statements
    )


def _named_databases(text: str, databases: Sequence[str]) -> list[str]:
    found = []
    for name in databases:
        if re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", text):
            found.append(name)
    return found


def _target(answer: str, block_start: int, databases: Sequence[str]) -> str | None:
    """The database named just before the block, else the only one the answer names, else the
    only one configured."""
    if len(databases) == 1:
        return databases[0]
    preceding = answer[:block_start]
    paragraph = preceding[preceding.rfind("\n\n") + 1 :] if "\n\n" in preceding else preceding
    named_here = _named_databases(paragraph, databases)
    if len(named_here) == 1:
        return named_here[0]
    named_anywhere = _named_databases(answer, databases)
    if len(named_anywhere) == 1:
        return named_anywhere[0]
    return None


async def find_sql_blocks_off_loop(
    answer: str, databases: Sequence[str], *, max_sql_chars: int = _MAX_SQL_CHARS
) -> list[SqlBlock]:
    """`find_sql_blocks`, on a worker thread when the answer is long."""
    if len(answer) <= _INLINE_CHARS:
        return find_sql_blocks(answer, databases, max_sql_chars=max_sql_chars)
    return await asyncio.to_thread(find_sql_blocks, answer, databases, max_sql_chars=max_sql_chars)


def find_sql_blocks(
    answer: str, databases: Sequence[str], *, max_sql_chars: int = _MAX_SQL_CHARS
) -> list[SqlBlock]:
    blocks = []
    for match in _FENCE.finditer(answer):
        label, body = match.group(1).lower(), trim_sql(match.group(2))
        if not body or len(body) > max_sql_chars:
            continue
        if label and label not in _SQL_LABELS:
            continue
        if not label and not _looks_like_sql(body):
            continue
        blocks.append(
            SqlBlock(
                sql=body,
                database=_target(answer, match.start(), databases),
                start=match.start(),
                end=match.end(),
            )
        )
    return blocks
