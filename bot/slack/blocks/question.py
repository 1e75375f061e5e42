"""Block Kit for the model's questions back to the person (the ask_user tool).

confirm → Yes / No buttons; choose → one button per option, or a select menu beyond five;
input → the question and "reply in this thread". A button's value (or a menu option's) is
only "<question id>:<option index>": the option itself is looked up in the stored question.
"""

from __future__ import annotations

import time
from typing import Any

from bot.agent.outcomes import Question
from bot.slack import mrkdwn
from bot.slack.blocks.common import Block, context, markdown_section, person, plain, slack_date

# One action id per button (Slack wants them unique within a block); all are matched by
# `OPTION_PATTERN`.
OPTION_PREFIX = "question_option_"
OPTION_PATTERN = rf"^{OPTION_PREFIX}\d+$"
OPTION_SELECT = "question_select"
MAX_BUTTONS = 5
INPUT_HINT = "Reply in this thread to answer."
_BUTTON_HINT = "Choose below."
_QUESTION_CHARS = 2_900


def option_value(question_id: str, index: int) -> str:
    return f"{question_id}:{index}"


def parse_option_value(value: object) -> tuple[str, int] | None:
    """(question id, option index) from a button's value; None when it is not one."""
    if not isinstance(value, str):
        return None
    question_id, _, index = value.rpartition(":")
    if not question_id or not index.isdigit() or len(index) > 3:
        return None
    return question_id, int(index)


def _asked(question: Question) -> str:
    line = f":question: {person(question.requester)} {mrkdwn.to_mrkdwn(question.text)}"
    return mrkdwn.truncate(line, _QUESTION_CHARS)[0]


def _buttons(question: Question) -> Block:
    elements = []
    for index, option in enumerate(question.options):
        button: dict[str, Any] = {
            "type": "button",
            "action_id": f"{OPTION_PREFIX}{index}",
            "text": plain(option.label, emoji=False),
            "value": option_value(question.id, index),
        }
        if question.kind == "confirm" and index == 0:
            button["style"] = "primary"
        elements.append(button)
    return {"type": "actions", "block_id": "question", "elements": elements}


def _menu(question: Question) -> Block:
    options = [
        {"text": plain(option.label, emoji=False), "value": option_value(question.id, index)}
        for index, option in enumerate(question.options)
    ]
    return {
        "type": "actions",
        "block_id": "question",
        "elements": [
            {
                "type": "static_select",
                "action_id": OPTION_SELECT,
                "placeholder": plain("Choose an answer"),
                "options": options,
            }
        ],
    }


def question_message(question: Question) -> dict[str, Any]:
    """The question, and the way to answer it: buttons, a menu, or a reply."""
    asked = _asked(question)
    blocks: list[Block] = [markdown_section(asked)]
    if question.kind in ("confirm", "choose") and question.options:
        few = len(question.options) <= MAX_BUTTONS
        blocks.append(_buttons(question) if few else _menu(question))
        hint = _BUTTON_HINT
        lines = [f"• {mrkdwn.escape(option.label)}" for option in question.options]
    else:
        hint = INPUT_HINT
        lines = []
    blocks.append(context(f"{hint} Only {person(question.requester)} can answer."))
    # The text is what notifications show: the question, the choices, how to answer.
    text = mrkdwn.truncate("\n".join([asked, *lines, f"_{hint}_"]), _QUESTION_CHARS)[0]
    return {"text": text, "blocks": blocks}


def answered_question(
    question: Question, label: str, user: str, at: float | None = None
) -> dict[str, Any]:
    """The question after a click: who answered what; no buttons left."""
    when = slack_date(time.time() if at is None else at)
    line = f":white_check_mark: {person(user)} answered *{mrkdwn.escape(label)}* {when}"
    asked = _asked(question)
    return {
        "text": f"{person(user)} answered: {mrkdwn.escape(label)}",
        "blocks": [markdown_section(asked), context(line)],
    }


def replied_question(question: Question, user: str) -> dict[str, Any]:
    """An input question once the person's reply in the thread answered it."""
    line = f":white_check_mark: {person(user)} answered in this thread."
    return {"text": line, "blocks": [markdown_section(_asked(question)), context(line)]}


def closed_question(question: Question) -> dict[str, Any]:
    """A question that can no longer be answered here (replaced by a newer message)."""
    line = (
        ":heavy_minus_sign: No longer open: a newer message in this thread replaced this question."
    )
    return {
        "text": "No longer open: replaced by a newer message",
        "blocks": [markdown_section(_asked(question)), context(line)],
    }
