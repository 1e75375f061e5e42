"""The terminal console: the same loop, approvals as a y/n prompt."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.agent import QueryResult
from bot.config import ConfigError, Mode
from bot.console import ReadLine, console_main, render_result, run_console
from tests.agent.support import REQUESTER, STAGING, AgentFactory, query
from tests.fakes.model_server import FakeModelServer, call, calls, say

CANCEL_11 = "UPDATE orders SET status = 'cancelled' WHERE id = 11"


def typed(*lines: str) -> ReadLine:
    """What the person types, one line per prompt; then end of input."""
    answers: Iterator[str] = iter(lines)

    async def read(prompt: str) -> str | None:
        return next(answers, None)

    return read


async def test_a_question_is_answered_and_its_rows_are_shown(
    make_agent: AgentFactory, model_server: FakeModelServer
) -> None:
    sql = "SELECT id, name FROM customers ORDER BY id"
    model_server.script(
        calls(call("execute_query", {"database": STAGING, "sql": sql})), say("3 customers.")
    )
    out = io.StringIO()
    code = await run_console(
        await make_agent(), mode=Mode.AGENT, requester=REQUESTER, read=typed("who?"), out=out
    )
    assert code == 0
    text = out.getvalue()
    assert "3 customers." in text
    assert "Linus" in text
    assert "Running query on shop-staging…" in text


@pytest.mark.parametrize(("typed_answer", "status"), [("y", "cancelled"), ("n", "pending")])
async def test_an_approval_is_a_yes_no_prompt(
    make_agent: AgentFactory,
    model_server: FakeModelServer,
    shop_url: str,
    typed_answer: str,
    status: str,
) -> None:
    model_server.script(
        calls(call("execute_query", {"database": STAGING, "sql": CANCEL_11})), say("Done.")
    )
    out = io.StringIO()
    await run_console(
        await make_agent(),
        mode=Mode.AGENT,
        requester=REQUESTER,
        read=typed("cancel order 11", typed_answer),
        out=out,
    )
    assert f"Approval needed on {STAGING} (staging), risk write:\n{CANCEL_11}" in out.getvalue()
    assert await query(shop_url, "SELECT status FROM orders WHERE id = 11") == [(status,)]


def test_a_result_renders_as_a_small_text_table() -> None:
    result = QueryResult(
        database="db",
        sql="SELECT 1",
        columns=("id", "name"),
        rows=((1, "Ada"), (2, None)),
        truncated=True,
    )
    lines = render_result(result).splitlines()
    assert lines[1].split(" | ") == ["id", "name"]
    assert lines[4].split(" | ") == ["2 ", "NULL"]
    assert lines[-1].startswith("(truncated")


async def test_an_unknown_database_flag_is_a_configuration_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "dbagent.toml"
    config.write_text(
        '[[databases]]\nname = "shop"\nurl = "mysql://u@127.0.0.1:3306/shop"\n'
        'environment = "staging"\n'
    )
    monkeypatch.setenv("DBAGENT_CONFIG", str(config))
    monkeypatch.setenv("DBAGENT_STATE_DIR", str(tmp_path / "state"))
    with pytest.raises(ConfigError, match="--database 'nope' is not configured \\(have: shop\\)"):
        await console_main(["--database", "nope"])


async def test_a_models_question_is_a_numbered_prompt(
    make_agent: AgentFactory, model_server: FakeModelServer
) -> None:
    options = [{"label": "Staging", "value": "shop-staging"}, {"label": "Prod", "value": "p"}]
    model_server.script(
        calls(call("ask_user", {"kind": "choose", "question": "Which one?", "options": options})),
        say("Staging then."),
    )
    out = io.StringIO()
    await run_console(
        await make_agent(), mode=Mode.ASK, requester=REQUESTER, read=typed("count", "1"), out=out
    )
    assert "Which one?\n  1. Staging\n  2. Prod" in out.getvalue()
    assert "Staging then." in out.getvalue()
    assert '"value":"shop-staging"' in model_server.new_tool_results()[0]


HIDDEN_OR = "UPDATE orders SET status = 'cancelled' WHERE id = 11 OR 1=1 -- \r\x1b[2K" + CANCEL_11


async def test_a_carriage_return_and_ansi_escapes_cannot_hide_sql_from_the_approver(
    make_agent: AgentFactory, model_server: FakeModelServer, shop_url: str
) -> None:
    model_server.script(
        calls(call("execute_query", {"database": STAGING, "sql": HIDDEN_OR})),
        say("Done.\r\x1b[2KNothing happened."),
    )
    out = io.StringIO()
    await run_console(
        await make_agent(),
        mode=Mode.AGENT,
        requester=REQUESTER,
        read=typed("cancel order 11", "n"),
        out=out,
    )
    printed = out.getvalue()
    assert "\r" not in printed and "\x1b" not in printed
    approval = printed.split("Approval needed", 1)[1].split("approve?", 1)[0]
    assert f"WHERE id = 11 OR 1=1 -- <U+000D><U+001B>[2K{CANCEL_11}" in approval
    assert "Done.<U+000D><U+001B>[2KNothing happened." in printed
    assert await query(shop_url, "SELECT COUNT(*) FROM orders WHERE status = 'cancelled'") == [(0,)]


def test_cells_and_column_names_are_shown_with_their_control_characters_visible() -> None:
    result = QueryResult(
        database="db",
        sql="SELECT note\u202e FROM t",
        columns=("note\u200b",),
        rows=(("paid\rrefunded\x1b[0m",),),
        truncated=False,
    )
    text = render_result(result)
    assert "paid<U+000D>refunded<U+001B>[0m" in text
    assert "note<U+200B>" in text
    assert "SELECT note<U+202E> FROM t" in text
    assert not any(char in text for char in "\r\x1b\u202e\u200b")


async def test_the_console_shows_the_cards_impact_and_offers_undo(
    make_agent: AgentFactory, model_server: FakeModelServer, shop_url: str
) -> None:
    model_server.script(
        calls(call("execute_query", {"database": STAGING, "sql": CANCEL_11})), say("Done.")
    )
    out = io.StringIO()
    await run_console(
        await make_agent(),
        mode=Mode.AGENT,
        requester=REQUESTER,
        # ask, approve, undo it, approve the undo
        read=typed("cancel order 11", "y", "y", "y"),
        out=out,
    )
    text = out.getvalue()
    change, undo = text.split("Undo on ", 1)
    # Before the first y: what the card shows — rows, what it reaches, the row before →
    # after, and that it can be undone.
    assert "Rows: 1 row" in change and "Reaches: " in change and ".orders" in change
    assert "First 1 row it changes:" in change and "status → new" in change
    assert "Undo: available after it runs" in change
    # Then the Undo, approved the same way, puts the row back.
    assert "UPDATE" in undo and "Rows: 1 row" in undo
    assert await query(shop_url, "SELECT status FROM orders WHERE id = 11") == [("pending",)]
