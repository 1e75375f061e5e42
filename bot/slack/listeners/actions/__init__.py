from __future__ import annotations

from slack_bolt.async_app import AsyncApp

from bot.slack import blocks
from bot.slack.listeners.actions import approve, deny


def register(app: AsyncApp) -> None:
    app.action(blocks.APPROVE_ONCE)(approve.handle_approve)
    app.action(blocks.APPROVE_THREAD)(approve.handle_approve)
    app.action(blocks.DENY)(deny.handle_deny)
