"""Benchmark: the Slack app under 100 concurrent threads.

    .venv/bin/python bench/bench_slack.py [--threads 100] [--model-delay 0.2]
                                          [--tool execute_query|list_tables] [--profile]
                                          [--model-client openai|aiohttp]

The real Bolt app (HTTP mode, signed requests), slack_sdk client, agent and MariaDB, with
the fake Slack Web API and the fake model server running in a child process — off the bot's
CPU, as the real ones are. The model answers after --model-delay seconds per call; each
thread makes one tool call, then gets its answer (two model calls per turn). Prints, from
one run:

- the wall time of a single thread (median of 5), then of N concurrent threads, and their
  ratio (target: ≤ 1.5×), after warm-up rounds of 1, 10 and N threads (so that connection
  pools are as full as a serving bot's);
- the bot process's CPU per turn under that load;
- the bot's own time per turn, excluding model and Slack latency: from the event reaching
  the app to the turn's last Slack call, minus the time covered by model and Slack calls
  (their union, as status updates overlap model calls) — median and p99;
- with --profile: the CPU split by part (Slack layer, agent + model client, database…).

`--model-client aiohttp` makes the model calls with plain aiohttp (the same request, and the
same stream reader) instead of the openai client, to show what the client itself costs.

bench_workers.py measures the same turns served by `python -m bot serve --workers N` on Redis.

Exit status 0 when the ratio meets the target. `--url` (or DBAGENT_TEST_MYSQL_URL) names
the MariaDB server (default: the test server).
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
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
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from slack_bolt.async_app import AsyncApp

if __package__ in (None, ""):  # run as a script: make `bot` and `tests` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.datasets import connect, schema_url
from bot.agent.model import ModelClient, ModelError, completion_request
from bot.agent.streaming import read_stream, turn_from_completion
from bot.agent.turns import JsonObject, ModelTurn
from bot.app import build_app as build_parts
from bot.config import DatabaseConfig, Limits, Settings
from bot.slack.app import build_app, services_of_app
from bot.slack.server import EVENTS_PATH, build_web_app
from bot.slack.web_api import api_session, make_client
from tests.fakes.local import serve_locally
from tests.fakes.model_server import FakeModelServer, Turn, call, calls, say
from tests.fakes.slack_server import BOT_USER_ID, TEAM_ID, FakeSlack
from tests.slack.conftest import signed_headers

DEFAULT_URL = os.environ.get("DBAGENT_TEST_MYSQL_URL", "mysql://root@127.0.0.1:3306/test")
SCHEMA = "dbagent_bench_slack"
DATABASE = "shop-bench"
SECRET = "bench-secret"
TOKEN = "xoxb-bench"
SINGLE_RUNS = 5


# -- per-turn clocks ---------------------------------------------------------------------


@dataclass
class TurnClock:
    """One event's turn: when it reached the app, and the external calls made for it."""

    started: float = field(default_factory=time.perf_counter)
    external: list[tuple[float, float]] = field(default_factory=list)
    last_slack_call: float = 0.0

    @property
    def total(self) -> float:
        return self.last_slack_call - self.started

    @property
    def own(self) -> float:
        return self.total - _union_length(self.external)


def _union_length(intervals: Sequence[tuple[float, float]]) -> float:
    covered, end = 0.0, float("-inf")
    for start, stop in sorted(intervals):
        if stop <= end:
            continue
        covered += stop - max(start, end)
        end = stop
    return covered


TURN: contextvars.ContextVar[TurnClock | None] = contextvars.ContextVar("turn", default=None)
TURNS: list[TurnClock] = []
ANSWERS: dict[str, int] = {}  # thread ts → answers posted there
SLACK_CALLS: list[str] = []


async def _timed(function: Callable[[], Awaitable[Any]], *, slack: bool) -> Any:
    clock = TURN.get()
    began = time.perf_counter()
    try:
        return await function()
    finally:
        ended = time.perf_counter()
        if clock is not None:
            clock.external.append((began, ended))
            if slack:
                clock.last_slack_call = max(clock.last_slack_call, ended)


def instrument(app: AsyncApp, model: ModelClient) -> None:
    """Time every Slack Web API call and model call against the turn that made it."""
    client = services_of_app(app).client
    api_call = client.api_call
    upload = client._upload_file
    complete = model.complete

    streams: dict[str, str] = {}  # a streamed message's ts → its thread

    def answered(thread_ts: str) -> None:
        ANSWERS[thread_ts] = ANSWERS.get(thread_ts, 0) + 1

    async def timed_api_call(api_method: str, **kwargs: Any) -> Any:
        SLACK_CALLS.append(api_method)
        sent = kwargs.get("json") or {}
        if api_method == "chat.postMessage" and str(sent.get("text")).startswith("Answer to"):
            answered(sent["thread_ts"])
        response = await _timed(lambda: api_call(api_method, **kwargs), slack=True)
        # A run that streamed its steps ends its stream with the answer's text.
        if api_method == "chat.startStream":
            streams[str(response.get("ts"))] = sent["thread_ts"]
        if api_method == "chat.stopStream":
            texts = [str(chunk.get("text")) for chunk in sent.get("chunks") or ()]
            thread_ts = streams.get(str(sent.get("ts")))
            if thread_ts and any(text.startswith("Answer to") for text in texts):
                answered(thread_ts)
        return response

    async def timed_upload(*args: Any, **kwargs: Any) -> Any:
        return await _timed(lambda: upload(*args, **kwargs), slack=True)

    async def timed_complete(*args: Any, **kwargs: Any) -> Any:
        return await _timed(lambda: complete(*args, **kwargs), slack=False)

    client.api_call = timed_api_call  # type: ignore[method-assign]
    client._upload_file = timed_upload  # type: ignore[method-assign]
    model.complete = timed_complete  # type: ignore[method-assign]


@web.middleware
async def start_turn(request: web.Request, handler: Any) -> web.StreamResponse:
    # Everything the request starts (Bolt's listener task, the thread's queue job, the
    # status writer) copies this context, so their calls land on this clock.
    clock = TurnClock()
    TURNS.append(clock)
    TURN.set(clock)
    return await handler(request)


# -- the run -----------------------------------------------------------------------------


def responder(tool: str) -> Callable[[dict[str, Any]], Turn]:
    def respond(body: dict[str, Any]) -> Turn:
        messages = body["messages"]
        question = next(m["content"] for m in messages if m.get("role") == "user")
        if messages[-1].get("role") == "tool":
            return say(f"Answer to {question}.")
        if tool == "list_tables":
            return calls(call("list_tables", {"database": DATABASE}))
        sql = "SELECT id, customer, total FROM orders ORDER BY id LIMIT 5"
        return calls(call("execute_query", {"database": DATABASE, "sql": sql}))

    return respond


async def prepare_schema(url: str, schema: str = SCHEMA) -> str:
    connection = await connect(url)
    try:
        async with connection.cursor() as cursor:
            await cursor.execute(f"CREATE DATABASE IF NOT EXISTS {schema}")
            await cursor.execute(
                f"CREATE TABLE IF NOT EXISTS {schema}.orders (id INT PRIMARY KEY, "
                "customer VARCHAR(50) NOT NULL, total DECIMAL(10,2) NOT NULL)"
            )
            await cursor.execute(f"DELETE FROM {schema}.orders")
            await cursor.execute(
                f"INSERT INTO {schema}.orders VALUES "
                + ", ".join(f"({i}, 'customer {i}', {i}.50)" for i in range(1, 21))
            )
    finally:
        connection.close()
    return schema_url(url, schema)


class AiohttpModelClient(ModelClient):
    """The model call over plain aiohttp: the request the openai client would send, read
    by the same stream reader; no retries (the benchmark's model never fails)."""

    def __init__(self, base_url: str, api_key: str, model: str) -> None:
        self.model = model
        self.stream = True
        self._url = base_url.rstrip("/") + "/chat/completions"
        self._headers = {"Authorization": f"Bearer {api_key}"}
        self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))

    async def complete(
        self,
        messages: Sequence[JsonObject],
        tools: Sequence[JsonObject],
        *,
        stream: bool | None = None,
    ) -> ModelTurn:
        streaming = self.stream if stream is None else stream
        request = completion_request(self.model, messages, tools, streaming=streaming)
        async with self._session.post(self._url, json=request, headers=self._headers) as response:
            if response.status != 200:
                raise ModelError(f"the model server failed with HTTP {response.status}")
            if not streaming:
                return turn_from_completion(await response.json())

            async def lines() -> Any:
                async for raw in response.content:
                    yield raw.decode()

            return await read_stream(lines())

    async def close(self) -> None:
        await self._session.close()


class Bench:
    def __init__(
        self,
        slack_api_url: str,
        model_url: str,
        url: str,
        state: Path,
        model_client: str = "openai",
    ) -> None:
        self.settings = Settings(
            slack_bot_token=TOKEN,
            slack_signing_secret=SECRET,
            slack_app_token=None,
            slack_api_url=slack_api_url,
            openai_base_url=model_url,
            openai_api_key="bench",
            openai_model="fake-model",
            databases=[DatabaseConfig(name=DATABASE, url=url, environment="staging")],
            limits=Limits(model_max_retries=0, pool_size=10),
        )
        self.state = state
        self._ts = 0
        self.model_client = model_client

    async def start(self) -> None:
        model: ModelClient | None = None
        if self.model_client == "aiohttp":
            model = AiohttpModelClient(model_url_of(self.settings), "bench", "fake-model")
        self.parts = await build_parts(
            self.settings.model_copy(update={"dbagent_state_dir": self.state}), model=model
        )
        self.store, self.model = self.parts.state, self.parts.model
        model, agent = self.parts.model, self.parts.agent
        self.session = api_session()
        # All threads share one channel; the fake Slack enforces no limit here, since this
        # measures the bot's overhead, not Slack's rate (tests/slack/test_web_api.py does).
        client = make_client(self.settings, session=self.session)
        self.app = build_app(self.settings, agent, self.store, client)
        instrument(self.app, model)
        web_app = build_web_app(self.app)
        web_app.middlewares.append(start_turn)
        self.runner, port = await serve_locally(web_app)
        self.url = f"http://127.0.0.1:{port}{EVENTS_PATH}"
        self.http = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))

    async def stop(self) -> None:
        await self.http.close()
        await self.runner.cleanup()
        await self.session.close()
        await self.parts.close()

    async def mention(self, text: str) -> str:
        self._ts += 1
        body, headers, ts = mention_event(self._ts, text)
        async with self.http.post(self.url, data=body, headers=headers) as response:
            assert response.status == 200, response.status
        return ts

    async def run(self, threads: int, label: str) -> tuple[float, list[TurnClock]]:
        TURNS.clear()
        ANSWERS.clear()
        began = time.perf_counter()
        thread_ids = await asyncio.gather(*(self.mention(f"{label} {i}") for i in range(threads)))
        deadline = time.monotonic() + 300
        while len(ANSWERS) < threads:
            if time.monotonic() > deadline:
                raise TimeoutError(f"only {len(ANSWERS)} of {threads} threads were answered")
            await asyncio.sleep(0.005)
        await services_of_app(self.app).queues.drain()
        turns = list(TURNS)
        ended = max(turn.last_slack_call for turn in turns)
        for ts in thread_ids:
            assert ANSWERS.get(ts) == 1, f"thread {ts} answered {ANSWERS.get(ts, 0)} times"
        return ended - began, turns


def mention_event(
    number: int, text: str, channel: str = "C0BENCH"
) -> tuple[bytes, dict[str, str], str]:
    """A signed app_mention event (body, headers) and its message ts, unique by `number`."""
    ts = f"{1_900_000_000 + number}.000300"
    body = json.dumps(
        {
            "type": "event_callback",
            "team_id": TEAM_ID,
            "event_id": f"EvBench{number}",
            "event": {
                "type": "app_mention",
                "user": "U0BENCH",
                "text": f"<@{BOT_USER_ID}> {text}",
                "ts": ts,
                "channel": channel,
            },
        }
    )
    headers = {"Content-Type": "application/json", **signed_headers(body, secret=SECRET)}
    return body.encode(), headers, ts


def model_url_of(settings: Settings) -> str:
    assert settings.openai_base_url is not None
    return settings.openai_base_url


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * len(ordered)) - 1))
    return ordered[index]


def describe(turns: list[TurnClock]) -> str:
    own = [turn.own * 1000 for turn in turns]
    return (
        f"median {statistics.median(own):6.1f} ms   p99 {percentile(own, 0.99):6.1f} ms   "
        f"max {max(own):6.1f} ms"
    )


def serve_fakes(connection: Connection, tool: str, model_delay: float) -> None:
    """The child process: the fake Slack and model servers, on their own event loop and
    CPU, as the real ones would be; runs until the parent says stop."""
    logging.basicConfig(level=logging.WARNING)

    async def run() -> None:
        async with (
            FakeSlack(users={"U0BENCH": "Europe/Paris"}, token=TOKEN) as slack,
            FakeModelServer(responder=responder(tool), delay_s=model_delay) as model,
        ):
            connection.send((slack.api_url, model.url))
            await asyncio.get_running_loop().run_in_executor(None, connection.recv)

    asyncio.run(run())


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=100)
    parser.add_argument("--model-delay", type=float, default=0.2)
    parser.add_argument("--tool", choices=["execute_query", "list_tables"], default="execute_query")
    parser.add_argument("--url", default=DEFAULT_URL)
    parser.add_argument("--model-client", choices=["openai", "aiohttp"], default="openai")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="profile the concurrent run and print where the bot's CPU goes (slower)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("asyncmy").setLevel(logging.ERROR)

    url = await prepare_schema(args.url)
    parent, child = multiprocessing.get_context("spawn").Pipe()
    fakes = multiprocessing.get_context("spawn").Process(
        target=serve_fakes, args=(child, args.tool, args.model_delay), daemon=True
    )
    fakes.start()
    try:
        slack_api_url, model_url = await asyncio.get_running_loop().run_in_executor(
            None, parent.recv
        )
        with tempfile.TemporaryDirectory() as state:
            bench = Bench(slack_api_url, model_url, url, Path(state) / "state", args.model_client)
            await bench.start()
            try:
                await bench.run(1, "warm-up")
                await bench.run(10, "warm-up")
                # Once at full width too: every pool (events, Slack, model, database) then
                # holds the connections the measured run needs, as a serving bot's do.
                await bench.run(args.threads, "warm-up")
                SLACK_CALLS.clear()
                singles = [await bench.run(1, f"single {i}") for i in range(SINGLE_RUNS)]
                single = statistics.median(wall for wall, _ in singles)
                single_turns = [turn for _, turns in singles for turn in turns]
                profiler = cProfile.Profile() if args.profile else None
                cpu = time.process_time()
                if profiler is not None:
                    profiler.enable()
                many, many_turns = await bench.run(args.threads, "concurrent")
                if profiler is not None:
                    profiler.disable()
                cpu = time.process_time() - cpu
            finally:
                await bench.stop()
    finally:
        parent.send("stop")
        fakes.join(10)

    calls_per_turn = len(SLACK_CALLS) / (SINGLE_RUNS + args.threads)
    print(
        f"dbagent Slack benchmark: {args.threads} threads, tool {args.tool}, "
        f"model {args.model_delay * 1000:.0f} ms per call, 2 model calls per turn, "
        f"model client {args.model_client}"
    )
    print(f"  load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    print(f"  Slack API calls per turn      {calls_per_turn:.1f}")
    print(f"  single thread wall time       {single * 1000:7.1f} ms   (median of {SINGLE_RUNS})")
    print(
        f"  {args.threads} concurrent threads        {many * 1000:7.1f} ms   "
        f"ratio {many / single:.2f}x (target <= 1.5x)"
    )
    print(
        f"  bot process CPU per turn      {cpu / args.threads * 1000:7.1f} ms "
        f"(all of it: Bolt, agent, model client, database driver, Slack client)"
    )
    print(f"  bot's own time, single turns  {describe(single_turns)}")
    print(f"  bot's own time, {args.threads} at once    {describe(many_turns)}")
    if profiler is not None and os.environ.get("BENCH_PSTATS"):
        pstats.Stats(profiler).sort_stats(os.environ["BENCH_PSTATS"]).print_stats(45)
    if profiler is not None and os.environ.get("BENCH_CALLERS"):  # who calls these?
        pstats.Stats(profiler).sort_stats("tottime").print_callers(os.environ["BENCH_CALLERS"])
    if profiler is not None:
        print("  where the CPU of the concurrent run went (profiled, so slower than above):")
        for group, seconds, share in cpu_by_group(profiler):
            print(f"    {group:<44} {seconds / args.threads * 1000:6.1f} ms/turn  {share:5.1%}")
    return 0 if many / single <= 1.5 else 1


# Profile entries by the part of the system they belong to (first match wins).
GROUPS = (
    ("Slack layer (bot/slack, slack_bolt, slack_sdk)", ("bot/slack/", "slack_bolt/", "slack_sdk/")),
    ("agent (bot/agent)", ("bot/agent/",)),
    (
        "openai client (openai, httpx2, anyio…)",
        ("openai/", "httpx", "httpcore", "h11/", "anyio/", "sniffio/", "distro/"),
    ),
    ("pydantic, typing", ("pydantic", "typing")),
    ("SQL classifier (bot/sql, sqlglot)", ("bot/sql/", "sqlglot")),
    ("database (bot/db, asyncmy)", ("bot/db/", "asyncmy/")),
    ("guard, state store (SQLite, Redis)", ("bot/guard", "bot/state/", "sqlite3", "redis/")),
    ("aiohttp (event server, Slack and model HTTP)", ("aiohttp/", "multidict/", "yarl/")),
    ("asyncio (the event loop's own work)", ("asyncio/", "selectors")),
    ("json", ("json/",)),
    ("other", ("",)),
)


def cpu_by_group(*profiles: cProfile.Profile | str) -> list[tuple[str, float, float]]:
    """The CPU of one or more profiles (a profiler, or a stats file it dumped) by group."""
    stats = pstats.Stats(*profiles)
    totals = dict.fromkeys((name for name, _ in GROUPS), 0.0)

    def group_of(filename: str) -> str:
        where = filename.replace("\\", "/")
        return next(name for name, markers in GROUPS if any(m in where for m in markers))

    for (filename, _, function), row in stats.stats.items():  # type: ignore[attr-defined]
        if "poll" in function and "select" in function:
            continue  # the event loop waiting: idle, not work
        if filename == "~":
            # A builtin (isinstance, json, socket…): charged to the code that called it.
            for (caller_file, _, _), caller_row in row[4].items():
                totals[group_of(caller_file)] += caller_row[2]
        else:
            totals[group_of(filename)] += row[2]
    everything = sum(totals.values()) or 1.0
    return [(name, seconds, seconds / everything) for name, seconds in totals.items()]


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
