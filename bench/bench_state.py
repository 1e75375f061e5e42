"""The embedded store at size: 100k sessions, 100k audit records, 200k seen events.

    python -m bench.bench_state [--sessions 100000] [--audit 100000] [--seen 200000] [--runs 3]

Measures, each `--runs` times (min / median / max):
- start-up: open the store and find the runs a restart must mark interrupted;
- `python -m bot audit --since 1h --json` (the command's own function, in this process);
- one prune pass over a store where half of the sessions and seen events are stale;
- the time of store calls made while pruning runs (a read and a claim every millisecond),
  and of the same calls without a prune, on the same machine at the same load.
Bars (issue): start-up ≤ 0.5 s, audit since 1h ≤ 50 ms, a prune pass ≤ 100 ms, no call
waiting > 10 ms behind a prune. The load average is printed with the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from bot.agent.audit_cli import audit_main
from bot.config import Settings
from bot.state import State, open_state

DAY = 86400.0
HISTORY = [  # ≈1.7 KB: a question, a tool call, its result and an answer
    {"role": "user", "content": "how many orders are pending on shop-staging?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {
                    "name": "execute_query",
                    "arguments": '{"database":"shop-staging","sql":"SELECT COUNT(*) FROM orders '
                    "WHERE status = 'pending'\"}",
                },
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": '{"columns":["n"],"rows":[[42]]}' * 20},
    {"role": "assistant", "content": "42 orders are pending. " * 20},
]


def settings(directory: Path) -> Settings:
    return Settings(dbagent_state_dir=directory, databases=[])


async def in_chunks(jobs: list[Callable[[], Awaitable[object]]], size: int = 2000) -> None:
    for start in range(0, len(jobs), size):
        await asyncio.gather(*(job() for job in jobs[start : start + size]))


async def fill(directory: Path, sessions: int, audits: int, seen: int) -> None:
    """Half the sessions idle past 30 days, half the seen events past a day, the audit log
    spread over 300 days with 100 records in the last hour."""
    now = time.time()
    rng = random.Random(7)
    clock = [now]
    state = await open_state(settings(directory), clock=lambda: clock[0])
    await in_chunks(
        [
            lambda n=n: state.sessions.save(
                {
                    "id": f"T1:C{n % 500}:{1700000000 + n}.000100",
                    "status": "running" if n % 10_000 == 0 else "idle",
                    "updated_at": now - (rng.random() * 60 * DAY),
                    "messages": HISTORY,
                }
            )
            for n in range(sessions)
        ]
    )
    times = sorted(now - 3600 - rng.random() * 300 * DAY for _ in range(audits - 100))
    # The last hundred come last, by the clock of the end of the fill (it takes minutes).
    times += [-rng.random() * 600 for _ in range(100)]
    for at in times:
        clock[0] = at if at > 0 else time.time() + at
        await state.audit.record(
            session_id="T1:C1:1700000000.000100",
            requester="U0ADA",
            approver="U0BOSS",
            database="shop-staging",
            environment="staging",
            risk="write",
            sql="UPDATE orders SET status = 'paid' WHERE id = 11",
            outcome="executed",
            rows=1,
            duration_ms=3.2,
        )
    seen_times = [now - rng.random() * 2 * DAY for _ in range(seen)]
    jobs: list[Callable[[], Awaitable[object]]] = []
    for n, at in enumerate(seen_times):

        async def claim(n: int = n, at: float = at) -> None:
            clock[0] = at
            await state.seen_events.claim(f"event:Ev{n:08d}")

        jobs.append(claim)
    await in_chunks(jobs)
    await state.close()


def spread(values: list[float]) -> str:
    return (
        f"min {min(values):8.2f}  median {statistics.median(values):8.2f}  max {max(values):8.2f}"
    )


async def start_up(directory: Path) -> float:
    started = time.perf_counter()
    state = await open_state(settings(directory))
    await state.sessions.running()  # what a restart looks up
    elapsed = time.perf_counter() - started
    await state.close()
    return elapsed * 1000


async def audit_since_hour(directory: Path) -> float:
    out = io.StringIO()
    started = time.perf_counter()
    code = await audit_main(["--state-dir", str(directory), "--since", "1h", "--json"], out=out)
    elapsed = time.perf_counter() - started
    assert code == 0 and len(out.getvalue().splitlines()) >= 100, "the last hour is missing"
    return elapsed * 1000


async def calls_meanwhile(
    state: State, work: Callable[[], Awaitable[object]] | None, seconds: float = 0.1
) -> tuple[object, list[float]]:
    """What `work` returns (None: `seconds` of nothing), and the time each store call made
    meanwhile took: a read and a claim, one pair a millisecond (ms)."""
    waits: list[float] = []
    done = asyncio.Event()

    async def caller() -> None:
        n = 0
        while not done.is_set():
            started = time.perf_counter()
            await state.sessions.exists(f"T1:C{n % 500}:{1700000000 + n}.000100")
            waits.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            await state.seen_events.claim(f"event:bench-{os.getpid()}-{n}-{time.time_ns()}")
            waits.append((time.perf_counter() - started) * 1000)
            n += 1
            await asyncio.sleep(0.001)

    task = asyncio.create_task(caller())
    await asyncio.sleep(0.02)  # the caller is under way
    waits.clear()
    result = await work() if work is not None else await asyncio.sleep(seconds)
    done.set()
    await task
    return result, sorted(waits)


async def prune_with_callers(directory: Path) -> tuple[float, list[float], list[float], object]:
    """One prune pass while calls go on: the pass's time (ms), each call's time during it
    and without it, and what the pass removed."""
    state = await open_state(settings(directory))
    _, alone = await calls_meanwhile(state, None)
    started = time.perf_counter()
    result, during = await calls_meanwhile(state, state.pruner().prune_pass)
    elapsed = (time.perf_counter() - started) * 1000
    await state.close()
    return elapsed, during, alone, result


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=100_000)
    parser.add_argument("--audit", type=int, default=100_000)
    parser.add_argument("--seen", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-state-") as scratch:
        base = Path(scratch) / "state"
        started = time.perf_counter()
        await fill(base, args.sessions, args.audit, args.seen)
        size = sum(f.stat().st_size for f in base.iterdir()) / 1e6
        print(
            f"filled {args.sessions} sessions, {args.audit} audit records, {args.seen} seen "
            f"events in {time.perf_counter() - started:.1f} s ({size:.0f} MB)"
        )
        print(f"load average before: {os.getloadavg()}")
        starts: list[float] = []
        audits: list[float] = []
        passes: list[float] = []
        worst: list[float] = []
        worst_alone: list[float] = []
        for run in range(args.runs):
            copy = Path(scratch) / f"run{run}"
            shutil.copytree(base, copy)  # each prune starts from the same backlog
            starts.append(await start_up(copy))
            audits.append(await audit_since_hour(copy))
            elapsed, during, alone, (removed, _) = await prune_with_callers(copy)
            passes.append(elapsed)
            worst.append(max(during))
            worst_alone.append(max(alone))
            print(
                f"run {run + 1}: the pass removed {removed}; {len(during)} calls during it "
                f"(median {statistics.median(during):.2f} ms), {len(alone)} without it "
                f"(median {statistics.median(alone):.2f} ms)"
            )
            shutil.rmtree(copy)
        print(f"start-up (ms)                 {spread(starts)}   bar 500")
        print(f"audit --since 1h (ms)         {spread(audits)}   bar 50")
        print(f"prune pass (ms)               {spread(passes)}   bar 100")
        print(f"slowest call during it (ms)   {spread(worst)}   bar 10 behind the prune")
        print(f"slowest call without it (ms)  {spread(worst_alone)}")
        print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    asyncio.run(main())
