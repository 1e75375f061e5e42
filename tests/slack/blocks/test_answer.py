"""The model's answer as a markdown block: Markdown renders as written; Slack's control
sequences in it cannot ping anyone."""

from __future__ import annotations

from bot.slack.blocks.answer import answer_message, answer_pieces, safe_markdown
from tests.slack.block_limits import assert_valid_message

TABLE = "## Orders\n\n| status | n |\n|---|---|\n| paid | 2 |\n\n```sql\nSELECT 1 < 2\n```"


def test_the_answer_is_one_markdown_block_written_as_the_model_wrote_it() -> None:
    (piece,) = answer_pieces(TABLE)
    message = answer_message(piece)
    assert message["blocks"] == [{"type": "markdown", "text": TABLE}]
    assert_valid_message(message)


def test_mentions_of_channels_and_people_from_data_do_not_ping() -> None:
    text = safe_markdown("customer note: <!channel> call <@U123> in <#C1>, and 1 < 2")
    assert "<!channel>" not in text and "<@U123>" not in text and "<#C1>" not in text
    assert "1 < 2" in text


def test_a_long_answer_is_cut_into_pieces_that_fit_a_markdown_block() -> None:
    text = "\n".join(["word " * 400] * 20)
    pieces = answer_pieces(text)
    assert len(pieces) > 1 and all(len(piece) <= 12_000 for piece in pieces)
    assert "\n".join(pieces).split() == text.split()  # nothing lost, nothing added
