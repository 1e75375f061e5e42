"""Nothing left open after a crash: the bot served as deployed (`python -m bot serve`), killed
with SIGKILL mid-run. Whichever process takes the run up — the restart, or on a fleet the
replica that sees the session's lease expire — stops the stream the run left streaming with
what happened, exactly once, and nothing runs twice."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from bot.config import Settings
from bot.slack import strings
from bot.slack.recovery import LEASE_WATCH_S
from bot.slack.sessions import Thread
from bot.state import open_state
from bot.state.live_messages import LiveMessages
from tests.agent.support import SLOW_READ, no_slow_read_left, statement_running
from tests.fakes.model_server import FakeModelServer, Turn, call, calls, say
from tests.fakes.slack_server import TEAM_ID, FakeSlack, Stream, streams
from tests.slack.conftest import APPROVER, CHANNEL, SCHEMA, STAGING, SlackHarness, run_sql
from tests.slack.served import ServedBot, bot_environment, private_redis
from tests.waiting import until

LEASE_S = 15.0  # a lease outlives its dead holder by its heartbeat's lifetime
STATED_S = 30.0  # docs/operations.md: told within this after the lease expires


@contextlib.asynccontextmanager
async def served(env: dict[str, str]) -> AsyncIterator[ServedBot]:
    bot = await ServedBot(env).start()
    try:
        yield bot
    finally:
        bot.kill()
        await bot.stop()


async def left_open(env: dict[str, str], thread_ts: str) -> set[str]:
    """What the served bot's store says its run of the thread has open (stream, working)."""
    settings = Settings(
        dbagent_state_dir=Path(env["DBAGENT_STATE_DIR"]),
        dbagent_state_url=env.get("DBAGENT_STATE_URL"),
    )
    state = await open_state(settings, read_only=True)
    try:
        session_id = Thread(TEAM_ID, CHANNEL, thread_ts).session_id
        return {m.kind for m in await LiveMessages(state.posted).left_open(session_id)}
    finally:
        await state.close()


def both_open(env: dict[str, str], thread_ts: str) -> Callable[[], Awaitable[bool]]:
    """Whether the run's stream and working message (with Stop) are open, and in the store."""

    async def check() -> bool:
        return await left_open(env, thread_ts) == {"stream", "working"}

    return check


def stream_of(slack: FakeSlack, thread_ts: str) -> Stream | None:
    return next((s for s in streams(slack) if s.thread_ts == thread_ts), None)


def stops_of(slack: FakeSlack, stream: Stream) -> list[Any]:
    return [c for c in slack.calls_to("chat.stopStream") if c.args.get("ts") == stream.ts]


def assert_closed_once_with_what_happened(slack: FakeSlack, stream: Stream, told: str) -> None:
    assert stream.stopped
    (stop,) = stops_of(slack, stream)  # once
    (step,) = stop.args["chunks"]
    assert (step["title"], step["status"], step["details"]) == (strings.STEP_CUT_OFF, "error", told)


def answers(harness: SlackHarness, thread_ts: str, text: str) -> list[str]:
    return [t for t in harness.texts(thread_ts) if text in t]


async def kill_slow_reads_until(shop_url: str, done: Callable[[], bool]) -> None:
    """Kill SLOW_READ whenever it runs (a run taken up reads again), until `done()`."""
    while not done():
        if await statement_running(shop_url):
            await no_slow_read_left(shop_url)
        await asyncio.sleep(0.1)


@pytest.fixture(autouse=True)
async def no_slow_read_from_an_earlier_test(shop_url: str) -> AsyncIterator[None]:
    await no_slow_read_left(shop_url)
    yield
    await no_slow_read_left(shop_url)


async def test_a_kill_during_a_streamed_read_then_a_restart_stops_the_stream_once(
    slack: FakeSlack, model: FakeModelServer, shop_url: str, tmp_path: Path
) -> None:
    sender = SlackHarness(slack, model, shop_url, tmp_path / "unused")
    env = bot_environment(tmp_path, slack, model, shop_url)
    model.script(
        calls(call("execute_query", {"database": STAGING, "sql": SLOW_READ})),
        say("Counted after all."),
    )
    async with served(env) as first:
        thread_ts, _ = await first.sender(sender).mention("count everything")

        # The stream and the working message (with Stop) are open, and in the store.
        await until(both_open(env, thread_ts), within_s=20)
        assert await statement_running(shop_url)
        first.kill()  # during the read
    stream = stream_of(slack, thread_ts)
    assert stream is not None and not stream.stopped

    restarted = {**env, "PORT": str(int(env["PORT"]) + 1)}
    async with served(restarted):
        killing = asyncio.create_task(
            kill_slow_reads_until(shop_url, lambda: bool(answers(sender, thread_ts, "Counted")))
        )
        await slack.wait_for(lambda: answers(sender, thread_ts, "Counted"), within_s=60)
        await killing
        await slack.wait_for(lambda: stream.stopped)
    assert_closed_once_with_what_happened(slack, stream, strings.CUT_OFF_RESUMED)
    assert answers(sender, thread_ts, "Counted") == ["Counted after all."]
    # The working message of the killed run, with its Stop button, is gone.
    assert [m for m in slack.thread(CHANNEL, thread_ts) if "stop_run" in str(m.blocks)] == []
    assert await left_open(env, thread_ts) == set()


def one_replica_dies_thinking(released: asyncio.Event) -> Callable[[dict[str, Any]], Any]:
    """A tool call; then the model thinks (until `released`) while its replica is killed;
    asked again by the replica that takes the run up, it answers."""
    asked = 0

    async def respond(body: dict[str, Any]) -> Turn:
        nonlocal asked
        asked += 1
        if asked == 1:
            return calls(call("list_tables", {"database": STAGING}))
        if asked == 2:
            await released.wait()
            return say("too late")
        return say("Answered by the replica that was left.")

    return respond


async def test_a_replica_killed_mid_run_is_taken_up_by_the_other_within_the_stated_time(
    slack: FakeSlack, model: FakeModelServer, shop_url: str, tmp_path: Path
) -> None:
    released = asyncio.Event()
    model.responder = one_replica_dies_thinking(released)
    sender = SlackHarness(slack, model, shop_url, tmp_path / "unused")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    try:
        async with private_redis(tmp_path) as redis_url:
            env_a = bot_environment(tmp_path / "a", slack, model, shop_url, state_url=redis_url)
            env_b = bot_environment(tmp_path / "b", slack, model, shop_url, state_url=redis_url)
            async with served(env_a) as replica_a, served(env_b) as replica_b:
                thread_ts, _ = await replica_a.sender(sender).mention("which tables?")
                await slack.wait_for(lambda: len(model.requests) == 2, within_s=20)
                await until(both_open(env_a, thread_ts), within_s=20)
                replica_a.kill()  # while its model thinks; B keeps serving
                killed_at = time.monotonic()

                answer = "Answered by the replica that was left."
                await slack.wait_for(
                    lambda: answers(sender, thread_ts, answer), within_s=LEASE_S + STATED_S
                )
                told_after = time.monotonic() - killed_at
                assert told_after <= LEASE_S + LEASE_WATCH_S + 5.0, told_after

                # B kept serving meanwhile, and serves on.
                model.responder = lambda body: say("Still here.")
                other, _ = await replica_b.sender(sender).mention("still there?")
                await slack.wait_for(lambda: "Still here." in sender.texts(other), within_s=20)
                await asyncio.sleep(LEASE_WATCH_S + 1)  # another look: nothing taken up twice
            stream = stream_of(slack, thread_ts)
            assert stream is not None
            assert_closed_once_with_what_happened(slack, stream, strings.CUT_OFF_RESUMED)
            assert answers(sender, thread_ts, answer) == [answer]
            # Nothing ran twice: the tool's result was kept, the model asked once more.
            resumed = model.requests[2]["messages"]
            assert sum(1 for m in resumed if m.get("role") == "tool") == 1
    finally:
        released.set()


RAISE_10 = "UPDATE orders SET total = total + 1 WHERE id = 10"


def dies_thinking_after_the_write(released: asyncio.Event) -> Callable[[dict[str, Any]], Any]:
    """A write (approved on a card); then the model thinks (until `released`) while its
    replica is killed; asked again by the replica that takes the run up, it answers."""
    asked = 0

    async def respond(body: dict[str, Any]) -> Turn:
        nonlocal asked
        asked += 1
        if asked == 1:
            return calls(call("execute_query", {"database": STAGING, "sql": RAISE_10}))
        if asked == 2:
            await released.wait()
            return say("too late")
        return say("Raised, told by the replica that was left.")

    return respond


async def test_a_replica_killed_after_an_approved_write_never_runs_it_twice(
    slack: FakeSlack, model: FakeModelServer, shop_url: str, tmp_path: Path
) -> None:
    released = asyncio.Event()
    model.responder = dies_thinking_after_the_write(released)
    sender = SlackHarness(slack, model, shop_url, tmp_path / "unused")
    (before,) = await run_sql(shop_url, [f"SELECT total FROM {SCHEMA}.orders WHERE id = 10"])
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    try:
        async with private_redis(tmp_path) as redis_url:
            env_a = bot_environment(tmp_path / "a", slack, model, shop_url, state_url=redis_url)
            env_b = bot_environment(tmp_path / "b", slack, model, shop_url, state_url=redis_url)
            async with served(env_a) as replica_a, served(env_b):
                thread_ts, _ = await replica_a.sender(sender).mention("raise order 10")
                (card,) = await slack.wait_for(lambda: sender.cards(thread_ts), within_s=20)
                await sender.click("approve_once", copy.deepcopy(card), user=APPROVER)
                await slack.wait_for(lambda: len(model.requests) == 2, within_s=20)
                await until(both_open(env_a, thread_ts), within_s=20)
                replica_a.kill()  # the write ran; the model thinks about its result

                answer = "Raised, told by the replica that was left."
                await slack.wait_for(
                    lambda: answers(sender, thread_ts, answer), within_s=LEASE_S + STATED_S
                )
                await asyncio.sleep(LEASE_WATCH_S + 1)  # another look: nothing taken up twice
            assert answers(sender, thread_ts, answer) == [answer]
            stopped = [s for s in streams(slack) if s.thread_ts == thread_ts and s.stopped]
            cut_off = [s for s in stopped if strings.STEP_CUT_OFF in json.dumps(s.chunks)]
            assert len(cut_off) == 1 and len(stops_of(slack, cut_off[0])) == 1
            # The write ran once: the total went up by one, not two.
            (after,) = await run_sql(shop_url, [f"SELECT total FROM {SCHEMA}.orders WHERE id = 10"])
            assert after[0] == before[0] + 1
    finally:
        released.set()
