"""A bot process for the kill tests: asks the (fake) model, which calls execute_query with
one write, and approves it for the thread. The test kills this process while the write runs.

    python -m tests.agent.approve_in_subprocess STATE_DIR SHOP_URL MODEL_URL SESSION_ID
"""

from __future__ import annotations

import asyncio
import sys

from bot.agent import Agent, AwaitingApproval, Requester, Skills, build_model_client
from bot.config import DatabaseConfig, Limits, Mode, Settings
from bot.db import DatabaseRegistry
from bot.state import open_state
from bot.state.grants import GrantScope


async def main(state_dir: str, shop_url: str, model_url: str, session_id: str) -> int:
    settings = Settings(
        openai_base_url=model_url,
        openai_api_key="test-key",
        openai_model="fake-model",
        databases=[DatabaseConfig(name="shop-staging", url=shop_url, environment="staging")],
        limits=Limits(model_max_retries=0, statement_timeout_s=120),
        dbagent_state_dir=state_dir,
    )
    store = await open_state(settings)
    registry = DatabaseRegistry(settings.databases, settings.limits)
    model = build_model_client(settings)
    agent = Agent(
        settings=settings, state=store, databases=registry, model=model, skills=Skills.load()
    )
    await agent.recover()
    requester = Requester(user_id="U0REQUEST")
    paused = await agent.handle_message(session_id, "go", requester=requester, mode=Mode.AGENT)
    if not isinstance(paused, AwaitingApproval):
        print(f"not paused: {paused}", flush=True)
        return 2
    print("approving", flush=True)
    await agent.approve(paused.pending.id, approver="U0APPROVE", scope=GrantScope.THREAD)
    print("finished", flush=True)  # the test kills the process before this
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(*sys.argv[1:5])))
