"""Clicks on buttons and menus in messages, one module per kind of message clicked."""

from __future__ import annotations

from slack_bolt.async_app import AsyncApp

from bot.slack.listeners.actions import approval_card, question, sql_actions, stop_run, undo


def register(app: AsyncApp) -> None:
    approval_card.register(app)
    question.register(app)
    sql_actions.register(app)
    stop_run.register(app)
    undo.register(app)
