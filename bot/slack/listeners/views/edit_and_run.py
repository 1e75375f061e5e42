"""The Edit & run modal submitted: problems are shown in the modal; otherwise it closes
and the edited SQL runs in the answer's thread, exactly as Run does."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext

from bot.slack import runs
from bot.slack.services import services_of

log = logging.getLogger(__name__)


async def handle_edit_submission(
    ack: AsyncAck, body: dict[str, Any], context: AsyncBoltContext
) -> None:
    submission = runs.Submission.from_body(body)
    if submission is None:
        log.warning("Edit & run submission without user or values closed")
        await ack()
        return
    services = services_of(context)
    errors = await runs.check_submission(services, submission)
    if errors:
        await ack(response_action="errors", errors=errors)
        return
    await ack()
    await runs.run_submission(services, submission)
