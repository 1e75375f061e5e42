"""Events API deliveries: mentions and messages; conversation.py is the run they start."""

from __future__ import annotations

from slack_bolt.async_app import AsyncApp

from bot.slack.listeners.events import app_home, app_mention, message


def register(app: AsyncApp) -> None:
    app.event("app_mention")(app_mention.handle_app_mention)
    # Every message event, subtypes included: those not for us are acknowledged and
    # dropped here, so Slack gets a 200 and does not retry them.
    app.event("message")(message.handle_message)
    app.event("app_home_opened")(app_home.handle_app_home_opened)
    app.event("assistant_thread_started")(app_home.handle_assistant_thread_started)
