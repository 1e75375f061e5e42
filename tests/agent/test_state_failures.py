"""When the state store cannot write (a full disk), the failure says why in words, and the
next message works once space is back, without a restart."""

from __future__ import annotations

from pathlib import Path

from bot.agent import Agent, Answer, Failed, Skills, build_model_client
from bot.config import Mode
from bot.db import DatabaseRegistry
from bot.state import StateError, open_state
from tests.agent.support import REQUESTER, SESSION, make_settings
from tests.fakes.model_server import FakeModelServer, say
from tests.state.disk import fill, small_disk


async def test_a_full_disk_fails_the_turn_with_the_reason_and_the_next_turn_works(
    model_server: FakeModelServer, shop_url: str, tmp_path: Path
) -> None:
    with small_disk(tmp_path / "disk") as disk:
        settings = make_settings(model_server, shop_url).model_copy(
            update={"dbagent_state_dir": disk / "state"}
        )
        state = await open_state(settings)
        registry = DatabaseRegistry(settings.databases, settings.limits)
        model = build_model_client(settings)
        agent = Agent(
            settings=settings, state=state, databases=registry, model=model, skills=Skills.load()
        )
        try:
            ballast = fill(disk)
            # Raised before the run starts (the adapter tells the person), or mid-run as
            # a Failed saying so: either way the reason is in the words.
            try:
                outcome = await agent.handle_message(
                    SESSION, "hello " * 5000, requester=REQUESTER, mode=Mode.AGENT
                )
            except StateError as exc:
                message = str(exc)
            else:
                assert isinstance(outcome, Failed)
                message = outcome.message
            assert "disk is full" in message and "free some disk space" in message
            assert not state.healthy

            ballast.unlink()
            model_server.script(say("back"))
            answer = await agent.handle_message(
                SESSION, "hello again", requester=REQUESTER, mode=Mode.AGENT
            )
            assert answer == Answer(text="back")
            assert state.healthy
        finally:
            await model.close()
            await registry.close()
            await state.close()
