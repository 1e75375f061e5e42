"""Every surface that shows a change's SQL shows the exact text, marked the same way: the
approval card, the audit channel's lines, Home and a result's context. A backtick is a
backtick (the audit line once turned it into a quote), and an invisible character is
marked as <U+XXXX> wherever it appears."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import replace

import pytest

from bot.slack.blocks import approval_card as blocks
from bot.slack.blocks.home import WaitingCard, home_view
from bot.slack.blocks.result_table import sql_context
from tests.slack.blocks.test_approval_card import decision, pending, texts

SQL = "UPDATE `orders` SET note = 'a`b <c> & d' WHERE id = 11"
HIDDEN = "UPDATE orders SET a = 1\u200b WHERE id = 11"


def fenced(line: str) -> list[str]:
    """The SQL each ``` fence of a mrkdwn line holds, as a reader sees it."""
    return [html.unescape(found.strip(" ")) for found in re.findall(r"```(.+?)```", line)]


def _card(sql: str) -> str:
    return texts(blocks.approval_card(pending(sql=sql)))


def _posted(sql: str) -> str:
    return blocks.posted_line(pending(sql=sql), None, public=True)


def _ran(sql: str) -> str:
    ran = replace(decision(True, "1 row affected"), pending=pending(sql=sql))
    return blocks.audit_line(ran, public=True)


def _home(sql: str) -> str:
    view = home_view([], [WaitingCard(pending(sql=sql), None, public=True)], now=1.8e9)
    return texts(view)


def _result(sql: str) -> str:
    return str(sql_context(sql)["elements"][0]["text"])


SURFACES: list[tuple[str, Callable[[str], str]]] = [
    ("the card", _card),
    ("the audit line of a posted card", _posted),
    ("the audit line of a run", _ran),
    ("Home", _home),
    ("a result's context", _result),
]


@pytest.mark.parametrize(("surface", "show"), SURFACES, ids=[s[0] for s in SURFACES])
def test_every_surface_shows_the_sql_exactly(surface: str, show: Callable[[str], str]) -> None:
    shown = show(SQL)
    assert SQL in [text.strip("\n") for text in fenced(shown.replace("\n", " "))], surface


@pytest.mark.parametrize(("surface", "show"), SURFACES, ids=[s[0] for s in SURFACES])
def test_every_surface_marks_an_invisible_character_the_same_way(
    surface: str, show: Callable[[str], str]
) -> None:
    shown = html.unescape(show(HIDDEN))
    assert "1<U+200B> WHERE" in shown, surface
    assert "\u200b" not in shown, surface
