from __future__ import annotations

import re

from slack_bolt.async_app import AsyncApp

from bot.slack import blocks, question_blocks, run_blocks
from bot.slack.listeners.actions import (
    answer_question,
    approve,
    choose_database,
    deny,
    edit_sql,
    run_sql,
)


def register(app: AsyncApp) -> None:
    app.action(blocks.APPROVE_ONCE)(approve.handle_approve)
    app.action(blocks.APPROVE_THREAD)(approve.handle_approve)
    app.action(blocks.DENY)(deny.handle_deny)
    app.action(run_blocks.RUN)(run_sql.handle_run_sql)
    app.action(run_blocks.EDIT)(edit_sql.handle_edit_sql)
    app.action(run_blocks.CHOOSE_DATABASE)(choose_database.handle_choose_database)
    app.action(re.compile(question_blocks.OPTION_PATTERN))(answer_question.handle_answer_question)
    app.action(question_blocks.OPTION_SELECT)(answer_question.handle_answer_question)
