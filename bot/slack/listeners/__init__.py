"""Bolt listeners, split by kind as in Slack's sample apps; `register(app)` wires them all."""

from __future__ import annotations

from slack_bolt.async_app import AsyncApp

from bot.slack.listeners import actions, events, views


def register(app: AsyncApp) -> None:
    events.register(app)
    actions.register(app)
    views.register(app)
