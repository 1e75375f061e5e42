"""Modal submissions."""

from __future__ import annotations

from slack_bolt.async_app import AsyncApp

from bot.slack.listeners.views import edit_and_run


def register(app: AsyncApp) -> None:
    edit_and_run.register(app)
