"""Keeping tool results and history small."""

from __future__ import annotations

import json

from bot.agent.compaction import compact_text, estimate_tokens, fit_history, total_tokens


def test_a_short_result_is_left_as_it_is() -> None:
    assert compact_text("short", 100) == "short"


def test_a_long_result_keeps_head_and_tail_around_a_note() -> None:
    text = "H" * 600 + "M" * 10_000 + "T" * 300
    compacted = compact_text(text, 900)
    assert compacted.startswith("H" * 600)
    assert compacted.endswith("T" * 300)
    assert f"[… {len(text) - 900} chars omitted …]" in compacted
    assert len(compacted) < 900 + 40


def test_a_compacted_table_still_states_its_row_count_and_truncation_at_the_end() -> None:
    rows = [[i, f"payload {i}"] for i in range(10_000)]
    table = json.dumps(
        {"columns": ["id", "payload"], "rows": rows, "row_count": 10_000, "truncated": True},
        separators=(",", ":"),
    )
    compacted = compact_text(table, 2_000)
    assert compacted.startswith('{"columns":["id","payload"],"rows":[[0,')
    assert compacted.endswith('"row_count":10000,"truncated":true}')


def conversation(old_result_chars: int) -> list[dict]:
    return [
        {"role": "user", "content": "first question"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "a", "function": {}}]},
        {"role": "tool", "tool_call_id": "a", "content": "A" * old_result_chars},
        {"role": "assistant", "content": "first answer"},
        {"role": "user", "content": "second question"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "b", "function": {}}]},
        {"role": "tool", "tool_call_id": "b", "content": "B" * old_result_chars},
    ]


def test_history_within_budget_is_untouched() -> None:
    messages = conversation(100)
    before = json.dumps(messages)
    assert fit_history(messages, 10_000) == 0
    assert json.dumps(messages) == before


def test_history_over_budget_shrinks_the_oldest_tool_result_first() -> None:
    messages = conversation(8_000)
    budget = total_tokens(messages) - 1_000
    assert fit_history(messages, budget) == 1
    assert "chars omitted" in messages[2]["content"]
    assert messages[6]["content"] == "B" * 8_000  # the current run's result stays whole
    assert total_tokens(messages) <= budget


def test_no_message_is_ever_removed_so_every_tool_call_keeps_its_result() -> None:
    messages = conversation(8_000)
    fit_history(messages, 10)
    assert len(messages) == 7
    assert [m["role"] for m in messages].count("tool") == 2


def test_tokens_are_estimated_at_about_four_characters_each() -> None:
    assert estimate_tokens("x" * 400) == 101
