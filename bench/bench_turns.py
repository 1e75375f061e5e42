"""Benchmark: CPU per turn as a thread grows (flat cost per turn).

    .venv/bin/python bench/bench_turns.py [--runs 3] [--turns 10] [--profile 1000]

The real Agent, openai client, embedded state store and MariaDB, with the fake model server
in a child process (off the bot's CPU, as a real one is). Each turn is one question: the
model calls execute_query (a ~3 KB result), then answers — two model calls per turn. For
each thread length N (1, 10, 100, 1,000 exchanges already in the thread) a fresh thread is
seeded with N - 2 exchanges shaped exactly as the agent stores them; unmeasured turns (two,
or one for N = 1) bring it to N — the first does the one-time work of fitting a long seeded
history, the second saves the fitted one over it, as in a thread that grew turn by turn —
then the measured turn runs. CPU is the bot process's (time.process_time, every thread)
around the measured turn alone, and the event loop thread's (time.thread_time) beside it.
Lengths take turns, so that load from outside falls on all of them alike.

Prints min / median / max over --runs runs of the per-turn median, the machine's load
average, and the largest request the model server received. A thread of 3,000 exchanges is
then driven the same way: its request must stay under the fake server's 1 MB body limit
(aiohttp's default, as many real gateways have). Exit status 0 when the 1,000-exchange
median is within 1.3x of the 1-exchange median and the 3,000-exchange turn succeeded.

`--profile N` profiles the measured turns at N exchanges and prints where the time went.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import logging
import multiprocessing
import os
import pstats
import statistics
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bot`, `bench` and `tests` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.datasets import DEFAULT_URL, connect, schema_url
from bot.agent import Agent, Answer, Requester, Skills, build_model_client
from bot.agent.sessions import Session
from bot.config import DatabaseConfig, Limits, Mode, Settings
from bot.db import DatabaseRegistry
from bot.state import open_state
from tests.fakes.model_server import FakeModelServer, Turn, call, calls, say

SCHEMA = "dbagent_bench_turns"
DATABASE = "bench"
LENGTHS = (1, 10, 100, 1_000)
LONGEST = 3_000
TARGET_RATIO = 1.3
REQUEST_LIMIT = 1024**2  # aiohttp's default client_max_size, which the fake server keeps
# About 3 KB of JSON: 40 rows of an id and a 60-character payload.
SQL = "SELECT seq AS id, REPEAT('x', 60) AS payload FROM seq_1_to_40"
REQUESTER = Requester(user_id="U0BENCH", name="Bench", timezone="UTC")


def respond(body: dict[str, Any]) -> Turn:
    messages = body["messages"]
    if messages[-1].get("role") == "tool":
        return say("There are 40 rows; each payload is sixty x characters.")
    return calls(call("execute_query", {"database": DATABASE, "sql": SQL}))


def serve_model(connection: Connection) -> None:
    """The child process: the fake model server; answers "sizes" with the largest request
    body seen since the last ask, and stops on "stop"."""
    logging.basicConfig(level=logging.WARNING)
    largest = [0]

    def sized(body: dict[str, Any]) -> Turn:
        largest[0] = max(largest[0], len(json.dumps(body)))
        return respond(body)

    async def run() -> None:
        async with FakeModelServer(responder=sized) as model:
            model.requests = _Discard()  # type: ignore[assignment]  # no memory growth
            connection.send(model.url)
            loop = asyncio.get_running_loop()
            while (await loop.run_in_executor(None, connection.recv)) == "sizes":
                connection.send(largest[0])
                largest[0] = 0

    asyncio.run(run())


class _Discard(list[Any]):
    def append(self, item: Any) -> None:
        pass


async def prepare_schema(url: str) -> str:
    connection = await connect(url)
    try:
        async with connection.cursor() as cursor:
            await cursor.execute(f"CREATE DATABASE IF NOT EXISTS {SCHEMA}")
    finally:
        connection.close()
    return schema_url(url, SCHEMA)


class Bench:
    def __init__(self, model_url: str, url: str, state: Path) -> None:
        self.settings = Settings(
            openai_base_url=model_url,
            openai_api_key="bench",
            openai_model="fake-model",
            databases=[DatabaseConfig(name=DATABASE, url=url, environment="staging")],
            limits=Limits(model_max_retries=0),
        )
        self.state = state
        self.threads = 0
        self.exchange: list[dict[str, Any]] = []

    async def start(self) -> None:
        self.store = await open_state(
            self.settings.model_copy(update={"dbagent_state_dir": self.state})
        )
        self.registry = DatabaseRegistry(self.settings.databases, self.settings.limits)
        self.model = build_model_client(self.settings)
        self.agent = Agent(
            settings=self.settings,
            state=self.store,
            databases=self.registry,
            model=self.model,
            skills=Skills.load(),
        )
        # One real exchange, to seed threads with exactly what the agent stores.
        session_id = self.new_thread()
        await self.turn(session_id)
        session = await self.agent.session(session_id)
        assert session is not None
        self.exchange = session.messages

    async def stop(self) -> None:
        await self.model.close()
        await self.registry.close()
        await self.store.close()

    def new_thread(self) -> str:
        self.threads += 1
        return f"bench:{self.threads}"

    async def seeded(self, exchanges: int) -> str:
        session_id = self.new_thread()
        messages = []
        for index in range(exchanges):
            for message in self.exchange:
                copy = json.loads(json.dumps(message))
                if copy["role"] == "user":
                    copy["content"] = f"question {index}: how many rows are there?"
                if copy.get("tool_calls"):
                    copy["tool_calls"][0]["id"] = f"call_seed_{index}"
                if copy["role"] == "tool":
                    copy["tool_call_id"] = f"call_seed_{index}"
                messages.append(copy)
        session = Session(id=session_id, mode=Mode.AGENT, messages=messages, requester=REQUESTER)
        await self.agent.sessions.save(session)
        return session_id

    async def turn(self, session_id: str) -> None:
        outcome = await self.agent.handle_message(
            session_id, "how many rows are there?", requester=REQUESTER, mode=Mode.AGENT
        )
        if not isinstance(outcome, Answer):
            raise RuntimeError(f"the turn did not end in an answer: {outcome}")

    async def cpu_per_turn(
        self, exchanges: int, profiler: cProfile.Profile | None
    ) -> tuple[float, float]:
        """CPU of one measured turn in a thread of `exchanges`: the process's, and the event
        loop thread's alone."""
        seeded = max(exchanges - 2, 0)
        session_id = await self.seeded(seeded)
        # Unmeasured turns bring the thread to `exchanges`: the first fits the seeded history,
        # the second writes the fitted one over it, as a thread that grew turn by turn was.
        for _ in range(exchanges - seeded):
            await self.turn(session_id)
        if profiler is not None:
            profiler.enable()
        began, loop_began = time.process_time(), time.thread_time()
        await self.turn(session_id)
        spent, loop_spent = time.process_time() - began, time.thread_time() - loop_began
        if profiler is not None:
            profiler.disable()
        return spent, loop_spent


def summary(values: list[float]) -> str:
    ms = [value * 1000 for value in values]
    return f"min {min(ms):6.2f}  median {statistics.median(ms):6.2f}  max {max(ms):6.2f} ms"


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--turns", type=int, default=10, help="measured turns per length")
    parser.add_argument("--url", default=DEFAULT_URL)
    parser.add_argument("--profile", type=int, default=0, help="profile at this many exchanges")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("asyncmy").setLevel(logging.ERROR)

    url = await prepare_schema(args.url)
    spawn = multiprocessing.get_context("spawn")
    parent, child = spawn.Pipe()
    server = spawn.Process(target=serve_model, args=(child,), daemon=True)
    server.start()
    load_before = os.getloadavg()
    medians: dict[int, list[float]] = {length: [] for length in LENGTHS}
    loop_medians: dict[int, list[float]] = {length: [] for length in LENGTHS}
    largest_request = 0
    profiler = cProfile.Profile() if args.profile else None
    longest_ok, longest_size, longest_error = False, 0, ""
    try:
        model_url = await asyncio.get_running_loop().run_in_executor(None, parent.recv)
        with tempfile.TemporaryDirectory() as state:
            bench = Bench(model_url, url, Path(state) / "state")
            await bench.start()
            try:
                for _ in range(args.runs):
                    spent: dict[int, list[float]] = {length: [] for length in LENGTHS}
                    on_loop: dict[int, list[float]] = {length: [] for length in LENGTHS}
                    # Lengths take turns, so that load from outside falls on all alike.
                    for _ in range(args.turns):
                        for length in LENGTHS:
                            watched = profiler if length == args.profile else None
                            total, loop_only = await bench.cpu_per_turn(length, watched)
                            spent[length].append(total)
                            on_loop[length].append(loop_only)
                    for length in LENGTHS:
                        medians[length].append(statistics.median(spent[length]))
                        loop_medians[length].append(statistics.median(on_loop[length]))
                parent.send("sizes")
                largest_request = parent.recv()
                session_id = await bench.seeded(LONGEST - 1)
                try:
                    await bench.turn(session_id)
                    await bench.turn(session_id)
                    longest_ok = True
                except RuntimeError as exc:
                    longest_error = str(exc)
                parent.send("sizes")
                longest_size = parent.recv()
            finally:
                await bench.stop()
    finally:
        parent.send("stop")
        server.join(10)
    load_after = os.getloadavg()

    print(
        f"dbagent turn benchmark: {args.runs} runs x {args.turns} measured turns per length; "
        "execute_query with a ~3 KB result, then the answer (2 model calls per turn)"
    )
    print(
        f"  load average before {load_before[0]:.2f} / after {load_after[0]:.2f} "
        f"on {os.cpu_count()} cores"
    )
    print("  exchanges   CPU per turn (median of each run: min / median / max)")
    for length in LENGTHS:
        print(f"  {length:>9}   {summary(medians[length])}")
    print("  of which on the event loop's thread (the rest: the state store's worker thread)")
    for length in LENGTHS:
        print(f"  {length:>9}   {summary(loop_medians[length])}")
    first, last = statistics.median(medians[1]), statistics.median(medians[LENGTHS[-1]])
    ratio = last / first
    print(f"  largest request to the model in those runs: {largest_request / 1024:.1f} KiB")
    profiled = f" (not valid: the turns at {args.profile} were profiled)" if args.profile else ""
    print(f"  {LENGTHS[-1]:,} vs 1 exchange: {ratio:.2f}x (target <= {TARGET_RATIO}x){profiled}")
    state = "answered" if longest_ok else f"FAILED ({longest_error})"
    print(
        f"  {LONGEST:,} exchanges: {state}; largest request {longest_size / 1024:.1f} KiB "
        f"(limit {REQUEST_LIMIT / 1024:.0f} KiB)"
    )
    if profiler is not None:
        print(f"  profile of the measured turns at {args.profile} exchanges:")
        stats = pstats.Stats(profiler)
        stats.sort_stats(os.environ.get("BENCH_PSTATS", "cumulative")).print_stats(40)
    met = ratio <= TARGET_RATIO and longest_ok and longest_size < REQUEST_LIMIT
    print("target met" if met else "TARGET MISSED")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
