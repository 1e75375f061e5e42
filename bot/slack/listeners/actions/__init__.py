from __future__ import annotations

import re

from slack_bolt.async_app import AsyncApp

from bot.slack import blocks, question_blocks, run_blocks
from bot.slack.listeners.actions import (
    answer_question,
    card_decision,
    choose_database,
    edit_sql,
    run_sql,
)


def register(app: AsyncApp) -> None:
    for decision in (blocks.APPROVE_ONCE, blocks.APPROVE_THREAD, blocks.DENY):
        app.action(decision)(card_decision.handle_card_decision)
    app.action(run_blocks.RUN)(run_sql.handle_run_sql)
    app.action(run_blocks.EDIT)(edit_sql.handle_edit_sql)
    app.action(run_blocks.CHOOSE_DATABASE)(choose_database.handle_choose_database)
    app.action(re.compile(question_blocks.OPTION_PATTERN))(answer_question.handle_answer_question)
    app.action(question_blocks.OPTION_SELECT)(answer_question.handle_answer_question)
