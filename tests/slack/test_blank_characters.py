"""Through Slack's real entry point: a character that renders blank or draws over its
neighbours, in a literal or a name, is shown on the approval card as a <U+XXXX> marker, so
the approver reads the bytes that will run."""

from __future__ import annotations

import json

import pytest

from tests.fakes.model_server import call, calls, say
from tests.slack.conftest import STAGING, SlackHarness

# (character, why it must be seen)
BLANKS = [
    ("\u3164", "HANGUL FILLER: 'paid<U+3164>' would read as 'paid'"),
    ("\u115f", "HANGUL CHOSEONG FILLER"),
    ("\uffa0", "HALFWIDTH HANGUL FILLER"),
    ("\u2800", "BRAILLE PATTERN BLANK"),
    ("\U0001d159", "MUSICAL SYMBOL NULL NOTEHEAD"),
    ("\U00016fe4", "KHITAN SMALL SCRIPT FILLER"),
    ("\u034f", "COMBINING GRAPHEME JOINER"),
    ("\u0332", "COMBINING LOW LINE"),
    ("\u0338", "COMBINING LONG SOLIDUS OVERLAY"),
    ("\u20e5", "COMBINING REVERSE SOLIDUS OVERLAY"),
    ("\ufe00", "VARIATION SELECTOR-1"),
    ("\ufe0f", "VARIATION SELECTOR-16 after a letter"),
    ("\U000e0100", "VARIATION SELECTOR-17"),
    ("\u17b4", "KHMER VOWEL INHERENT AQ"),
    ("\u17b5", "KHMER VOWEL INHERENT AA"),
    ("\ufffc", "OBJECT REPLACEMENT CHARACTER"),
    ("\ufffd", "REPLACEMENT CHARACTER"),
]


@pytest.mark.parametrize(("char", "why"), BLANKS, ids=[why for _, why in BLANKS])
async def test_a_blank_rendering_character_is_marked_on_the_card(
    harness: SlackHarness, char: str, why: str
) -> None:
    sql = f"UPDATE orders SET status = 'paid{char}' WHERE id = 11"
    harness.model.script(
        calls(call("execute_query", {"database": STAGING, "sql": sql})), say("Asked.")
    )
    thread_ts, _ = await harness.mention("mark order 11 as paid")
    card = await harness.wait_for_card(thread_ts)
    text = json.dumps(card.blocks, ensure_ascii=False).replace("&lt;", "<").replace("&gt;", ">")
    assert f"paid<U+{ord(char):04X}>'" in text, why
    assert char not in text, why
