"""One execute_query cuts its SQL into statements once: the classification carries the
statements and the facts read from their text, and the guard, the card and the run read them
from there instead of splitting the text again.

The splitter is counted by wrapping the real function wherever bot/ holds it (an observation:
every call still goes to the real splitter and returns what it returns)."""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Callable, Iterator

import pytest

from bot.agent.tools import ApprovalRequired, ToolContext
from bot.sql import lexical
from bot.state.grants import GrantScope
from tests.agent.support import APPROVER, SESSION, STAGING, call_tool, query, reply_of

READ = "SELECT id, status FROM orders WHERE id <= 12"
WRITE = "UPDATE orders SET status = 'cancelled' WHERE id = 11"
SCRIPT = "SELECT 1; UPDATE orders SET status = 'shipped' WHERE id = 12"


class Splits:
    """Every call of the statement splitter: the text it cut, and which function asked."""

    def __init__(self, real: Callable[[str], list[lexical.Piece]]) -> None:
        self.real = real
        self.calls: list[tuple[str, str]] = []

    def clear(self) -> None:
        self.calls.clear()

    def of(self, sql: str) -> list[str]:
        """The callers that cut `sql`, or one of its statements again."""
        texts = {sql, *(piece.text for piece in self.real(sql))}
        return [caller for text, caller in self.calls if text in texts]

    def counted(self, sql: str) -> list[lexical.Piece]:
        self.calls.append((sql, _caller()))
        return self.real(sql)


def _caller() -> str:
    """The first function outside the lexer on the way to the splitter."""
    for frame in reversed(traceback.extract_stack()[:-2]):
        if not frame.filename.endswith("bot/sql/lexical.py"):
            return f"{frame.filename.rsplit('/bot/', 1)[-1]}:{frame.name}"
    return "?"


@pytest.fixture
def splits(monkeypatch: pytest.MonkeyPatch) -> Iterator[Splits]:
    real = lexical.split
    counted = Splits(real)
    for name, module in list(sys.modules.items()):
        if (name == "bot" or name.startswith("bot.")) and getattr(module, "split", None) is real:
            monkeypatch.setattr(module, "split", counted.counted)
    yield counted


async def test_a_read_is_cut_into_statements_once(
    tool_context: ToolContext, splits: Splits
) -> None:
    reply = await reply_of(tool_context, "execute_query", {"database": STAGING, "sql": READ})
    assert json.loads(reply.content)["row_count"] == 3
    assert splits.of(READ) == ["sql/risk.py:classify"]


@pytest.mark.parametrize("sql", [WRITE, SCRIPT], ids=["one statement", "a script"])
async def test_a_write_is_cut_once_for_its_card_and_once_when_it_runs(
    tool_context: ToolContext, splits: Splits, shop_url: str, sql: str
) -> None:
    card = await call_tool(tool_context, "execute_query", {"database": STAGING, "sql": sql})
    assert isinstance(card, ApprovalRequired)
    assert splits.of(sql) == ["sql/risk.py:classify"]
    splits.clear()
    await tool_context.grants.mint(SESSION, STAGING, sql, GrantScope.ONCE, APPROVER)
    ran = await reply_of(tool_context, "execute_query", {"database": STAGING, "sql": sql})
    assert not ran.content.startswith(("Error", "Blocked")), ran.content
    assert await query(shop_url, "SELECT COUNT(*) FROM orders WHERE status = 'pending'") == [(1,)]
    assert splits.of(sql) == ["sql/risk.py:classify"]
