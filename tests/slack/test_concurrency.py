"""Many threads at once: each answered exactly once, in its own thread."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.fakes.model_server import Turn, call, calls, say
from tests.slack.conftest import STAGING, SlackHarness

THREADS = 100


def per_thread(body: dict[str, Any]) -> Turn:
    """One tool call, then an answer naming the question it answers."""
    messages = body["messages"]
    question = next(m["content"] for m in messages if m.get("role") == "user")
    if messages[-1].get("role") == "tool":
        return say(f"Answer to {question}.")
    return calls(call("list_tables", {"database": STAGING}))


async def test_a_hundred_threads_are_each_answered_exactly_once(harness: SlackHarness) -> None:
    harness.model.responder = per_thread
    harness.model.delay_s = 0.05
    sent = await asyncio.gather(*(harness.mention(f"question {i}") for i in range(THREADS)))
    assert {response.status for _, response in sent} == {200}
    threads = {thread_ts: i for i, (thread_ts, _) in enumerate(sent)}

    def all_answered() -> bool:
        return all(any(t.startswith("Answer to") for t in harness.texts(ts)) for ts in threads)

    await harness.slack.wait_for(all_answered, within_s=60)
    await harness.idle()
    for thread_ts, i in threads.items():
        assert harness.texts(thread_ts) == [f"Answer to question {i}."]
    assert len(harness.model.requests) == 2 * THREADS
    # Status lines are all cleaned up.
    statuses = [m for m in harness.slack.messages if "hourglass" in m.text and not m.deleted]
    assert statuses == []
