"""Threads as sessions: ids, persisted dedupe, and per-thread queues."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bot.config import Settings
from bot.slack.sessions import Dedupe, KnownSessions, SessionQueues, Thread, session_id
from bot.state import State, open_state


def test_a_session_id_is_team_channel_and_thread() -> None:
    assert session_id("T1", "C1", "1700000000.000100") == "T1:C1:1700000000.000100"
    thread = Thread.from_session_id("T1:C1:1700000000.000100")
    assert thread == Thread("T1", "C1", "1700000000.000100")
    assert thread.session_id == "T1:C1:1700000000.000100"


async def test_a_retry_of_the_same_event_is_not_processed_again(state: State) -> None:
    dedupe = Dedupe(state.seen_events)
    assert await dedupe.first_delivery("Ev1", "C1", "1.1")
    assert not await dedupe.first_delivery("Ev1", "C1", "1.1")


async def test_the_same_message_under_another_event_id_is_a_duplicate(state: State) -> None:
    # A mention arrives as app_mention and as message: two event ids, one channel+ts.
    dedupe = Dedupe(state.seen_events)
    assert await dedupe.first_delivery("Ev1", "C1", "1.1")
    assert not await dedupe.first_delivery("Ev2", "C1", "1.1")
    assert await dedupe.first_delivery("Ev3", "C1", "1.2")
    assert await dedupe.first_delivery("Ev4", "C2", "1.1")


async def test_concurrent_deliveries_of_one_message_claim_it_once(state: State) -> None:
    dedupe = Dedupe(state.seen_events)
    claims = await asyncio.gather(
        *(dedupe.first_delivery(f"Ev{i}", "C1", "9.9") for i in range(20))
    )
    assert claims.count(True) == 1


async def test_seen_deliveries_survive_a_restart(tmp_path: Path) -> None:
    settings = Settings(dbagent_state_dir=tmp_path / "state", databases=[])
    first = await open_state(settings)
    assert await Dedupe(first.seen_events).first_delivery("Ev1", "C1", "1.1")
    await first.close()
    second = await open_state(settings)
    try:
        assert not await Dedupe(second.seen_events).first_delivery("Ev1", "C1", "1.1")
    finally:
        await second.close()


async def test_a_session_runs_its_jobs_one_at_a_time_in_order() -> None:
    queues = SessionQueues()
    log: list[str] = []
    running = 0

    def job(name: str):
        async def run() -> None:
            nonlocal running
            running += 1
            assert running == 1
            log.append(f"start {name}")
            await asyncio.sleep(0.01)
            log.append(f"end {name}")
            running -= 1

        return run

    assert queues.submit("s", job("a")) == 0
    assert queues.submit("s", job("b")) == 1
    assert queues.submit("s", job("c")) == 2
    await queues.drain()
    assert log == ["start a", "end a", "start b", "end b", "start c", "end c"]
    assert not queues.busy("s")


async def test_sessions_run_in_parallel() -> None:
    queues = SessionQueues()
    started = asyncio.Event()
    both = []

    async def first() -> None:
        both.append(1)
        await asyncio.wait_for(started.wait(), 1)

    async def second() -> None:
        both.append(2)
        started.set()

    queues.submit("s1", first)
    queues.submit("s2", second)
    await asyncio.wait_for(queues.drain(), 2)
    assert sorted(both) == [1, 2]


async def test_a_failing_job_does_not_stop_the_queue() -> None:
    queues = SessionQueues()
    done = []

    async def boom() -> None:
        raise RuntimeError("boom")

    async def fine() -> None:
        done.append(True)

    queues.submit("s", boom)
    queues.submit("s", fine)
    await queues.drain()
    assert done == [True]


async def test_known_sessions_come_from_memory_or_the_stored_sessions(state: State) -> None:
    known = KnownSessions(state.sessions)
    assert not await known.contains("T:C:1")
    known.add("T:C:1")
    assert await known.contains("T:C:1")
    await state.sessions.save({"id": "T:C:2", "status": "idle", "updated_at": 1.0})
    assert await KnownSessions(state.sessions).contains("T:C:2")


async def test_a_held_delivery_drops_its_repeats_until_it_is_let_go(state: State) -> None:
    dedupe = Dedupe(state.seen_events)
    assert dedupe.hold("Ev1", "C1", "3.1")
    assert not dedupe.hold("Ev1", "C1", "3.1")  # Slack's retry while it waits
    assert not dedupe.hold("Ev2", "C1", "3.1")  # its message event twin
    dedupe.let_go("Ev1", "C1", "3.1")
    assert dedupe.hold("Ev1", "C1", "3.1")  # never claimed: may still be answered
    assert await dedupe.first_delivery("Ev1", "C1", "3.1")  # claimed when its run starts


async def test_jobs_dropped_at_cancel_run_their_on_drop() -> None:
    queues = SessionQueues()
    started, dropped = asyncio.Event(), []

    async def long_job() -> None:
        started.set()
        await asyncio.sleep(3600)

    async def never_started() -> None:
        raise AssertionError("a dropped job must not run")

    async def note_drop() -> None:
        dropped.append("second")

    queues.submit("s1", long_job)
    queues.submit("s1", never_started, on_drop=note_drop)
    await started.wait()
    await queues.cancel(within_s=1.0)
    assert dropped == ["second"]
    assert not queues.busy("s1")
