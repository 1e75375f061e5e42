"""Model text → safe mrkdwn, and splitting it to fit Slack's limits."""

from __future__ import annotations

import re

import pytest

from bot.slack.blocks.home import sql_head
from bot.slack.blocks.result_table import sql_context
from bot.slack.mrkdwn import FENCE, escape, one_line, split, to_mrkdwn, truncate

CONVERSIONS = [
    # (model text, mrkdwn, reason)
    ("a < b & c > d", "a &lt; b &amp; c &gt; d", "the three control characters are escaped"),
    ("<!channel> look", "&lt;!channel&gt; look", "the model cannot ping a channel"),
    ("hi <@U123>", "hi &lt;@U123&gt;", "nor mention people"),
    ("**total**: 5", "*total*: 5", "bold becomes Slack bold"),
    ("__total__", "*total*", "underscore bold too"),
    ("an *important* row", "an _important_ row", "single-star emphasis becomes italics"),
    ("SELECT * FROM t * 2", "SELECT * FROM t * 2", "lone stars are left alone"),
    ("~~old~~", "~old~", "strike-through"),
    ("## Orders today", "*Orders today*", "headings become bold lines"),
    ("- one\n* two", "• one\n• two", "bullets"),
    (
        "see [the docs](https://x.io/a?b=1&c=2)",
        "see the docs (https://x.io/a?b=1&amp;c=2)",
        "a link shows where it goes",
    ),
    ("use `a<b && **c**`", "use `a&lt;b &amp;&amp; **c**`", "inline code is only escaped"),
    (
        "```sql\nSELECT **x** FROM t WHERE a < 1\n```",
        "```\nSELECT **x** FROM t WHERE a &lt; 1\n```",
        "fenced code is only escaped; the language tag is dropped",
    ),
    ("```\nSELECT 1", "```\nSELECT 1\n```", "an unclosed fence is closed"),
    ("```SELECT 1```", "```\nSELECT 1\n```", "a one-line fence gets lines of its own"),
    ("&amp; stays literal", "&amp;amp; stays literal", "text that looks escaped is escaped again"),
]


@pytest.mark.parametrize(("text", "expected", "reason"), CONVERSIONS)
def test_to_mrkdwn(text: str, expected: str, reason: str) -> None:
    assert to_mrkdwn(text) == expected, reason


def test_escape_escapes_ampersand_first() -> None:
    assert escape("<&>") == "&lt;&amp;&gt;"


def _balanced(piece: str) -> bool:
    return sum(1 for line in piece.split("\n") if line.strip() == FENCE) % 2 == 0


def test_short_text_is_one_piece() -> None:
    assert split("hello") == ["hello"]
    assert split("") == []


def test_long_prose_splits_between_lines_within_the_limit() -> None:
    text = "\n".join(f"line {i}: " + "word " * 10 for i in range(300))
    pieces = split(text, 1_000)
    assert all(len(piece) <= 1_000 for piece in pieces)
    assert "\n".join(pieces).split("\n") == text.split("\n")


def test_a_cut_prefers_a_paragraph_break() -> None:
    first = "\n".join(["alpha " * 10] * 10)
    second = "\n".join(["beta " * 10] * 10)
    pieces = split(f"{first}\n\n{second}", 900)
    assert pieces[0] == first


def test_a_code_block_split_is_closed_and_reopened() -> None:
    code = "\n".join(f"SELECT {i} FROM t WHERE a &lt; {i};" for i in range(400))
    text = f"Here it is:\n```\n{code}\n```\nThat is all."
    pieces = split(text, 2_000)
    assert len(pieces) > 3
    for piece in pieces:
        assert len(piece) <= 2_000
        assert _balanced(piece), piece
    assert pieces[1].startswith(FENCE + "\n")
    assert pieces[-1].endswith("That is all.")
    # Nothing lost: every line of code is in exactly one piece.
    lines = [line for piece in pieces for line in piece.split("\n") if line.startswith("SELECT")]
    assert lines == code.split("\n")


def test_a_line_longer_than_the_limit_is_cut_at_a_space() -> None:
    text = "word " * 2_000
    pieces = split(text.strip(), 500)
    assert all(len(piece) <= 500 for piece in pieces)
    assert " ".join(pieces).split() == text.split()


def test_a_cut_never_falls_inside_an_entity() -> None:
    text = escape("<>&" * 2_000)
    for piece in split(text, 1_000):
        assert len(piece) <= 1_000
        assert re.fullmatch(r"(&lt;|&gt;|&amp;)+", piece), piece[-10:]


def test_a_long_line_inside_code_is_cut_and_fenced() -> None:
    text = f"```\n{'x' * 5_000}\n```"
    pieces = split(text, 1_000)
    assert all(len(piece) <= 1_000 and _balanced(piece) for piece in pieces)
    assert "".join(p.replace(FENCE, "").replace("\n", "") for p in pieces) == "x" * 5_000


def test_the_default_limit_is_a_section_block() -> None:
    pieces = split(to_mrkdwn("a < b\n" * 2_000))
    assert all(len(piece) <= 3_000 for piece in pieces)


def test_truncate_marks_the_cut_and_keeps_entities_whole() -> None:
    assert truncate("short", 10) == ("short", False)
    assert truncate("abc&amp;def", 6) == ("abc…", True)
    text, cut = truncate("x" * 100, 10)
    assert cut and len(text) == 10 and text.endswith("…")


CODE_TEXT = [
    # (sql, what must not survive, reason)
    (
        "SELECT 1 -- ```\n*DROP* everything",
        "```",
        "a fence in the SQL must not end the card's block",
    ),
    ("SELECT '\u202e' AS x", "\u202e", "a bidi override must not reorder what the approver reads"),
    ("SELECT 1\u200b", "\u200b", "a zero-width character must show itself"),
    ("SELECT 1\x00", "\x00", "a control character must show itself"),
    ("SELECT 1 < 2 & 3 > 1", "<", "Slack's control characters are escaped"),
]


@pytest.mark.parametrize(("sql", "hidden", "reason"), CODE_TEXT, ids=[c[2] for c in CODE_TEXT])
def test_code_text_shows_the_statement_and_nothing_else(sql, hidden, reason):
    from bot.slack.mrkdwn import code_text

    shown = code_text(sql)
    assert hidden not in shown.replace("`\u200b`\u200b`", ""), reason
    assert "\n" in shown or "\n" not in sql, "line breaks stay as they are"


def test_an_arabic_letter_mark_is_shown_not_obeyed():
    from bot.slack.mrkdwn import code_text

    assert code_text("WHERE id <\u061c 1000") == "WHERE id &lt;&lt;U+061C&gt; 1000"


def test_a_no_break_space_in_a_name_is_shown():
    from bot.slack.mrkdwn import code_text

    assert code_text("DROP TABLE x\u00a0") == "DROP TABLE x&lt;U+00A0&gt;"


ONE_LINE_CASES = [
    ("a \n\t b", "a b", "spaces, tabs and newlines a reader sees fold to one space"),
    ("a\rOR 1=1", "a\rOR 1=1", "a carriage return is kept, for shown() to mark"),
    ("t\u00a0", "t\u00a0", "a no-break space is part of a name to the server"),
    ("a\u2028b", "a\u2028b", "a line separator is kept, for shown() to mark"),
    ("  padded  ", "padded", "the ends are trimmed"),
]


@pytest.mark.parametrize(("text", "expected", "reason"), ONE_LINE_CASES)
def test_one_line_folds_only_visible_whitespace(text: str, expected: str, reason: str) -> None:
    assert one_line(text) == expected, reason


def test_a_carriage_return_in_sql_on_one_line_is_marked_not_hidden() -> None:
    sql = "UPDATE t SET a = 1\rWHERE id = 1 OR 1=1"
    assert "<U+000D>" in sql_head(sql).replace("&lt;", "<").replace("&gt;", ">")
    context = sql_context(sql)["elements"][0]["text"]
    assert "<U+000D>" in context.replace("&lt;", "<").replace("&gt;", ">")
