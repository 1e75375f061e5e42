"""Questions back to a person: answered once."""

from __future__ import annotations

import asyncio

from bot.state import State
from tests.state.conftest import Clock


async def test_a_question_is_answered_once(state: State, clock: Clock) -> None:
    question = {"id": "q1", "created_at": clock.now, "options": [], "text": "Which one?"}
    await state.questions.add(question)
    assert await state.questions.get("q1") == question
    claims = await asyncio.gather(*(state.questions.claim("q1") for _ in range(20)))
    assert [claim for claim in claims if claim is not None] == [question]
    assert await state.questions.get("q1") is None
