from __future__ import annotations

from slack_bolt.async_app import AsyncApp

from bot.slack import run_blocks
from bot.slack.listeners.views import edit_and_run


def register(app: AsyncApp) -> None:
    app.view(run_blocks.EDIT_VIEW)(edit_and_run.handle_edit_submission)
