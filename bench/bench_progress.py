"""Benchmark: what a person sees and what Slack is asked, per turn, at 1 and 50 threads.

    .venv/bin/python bench/bench_progress.py [--threads 1 50] [--model-delays 0.2 2]
                                             [--runs 3] [--slack-limits]

The real Bolt app (HTTP mode, signed requests), slack_sdk client, agent and MariaDB, with
the fake Slack Web API and the fake model server in a child process (off the bot's CPU).
Every thread mentions the bot in one channel; the model answers after --model-delays
seconds per call, one tool call then the answer (two model calls per turn). For each
(threads, model delay) it prints, as min / median / max over --runs runs:

- time to first visible progress: from the mention being sent to the first call Slack
  accepted that a person sees in the thread (a reaction, a post, a stream, a status) —
  the median over the run's threads;
- time to the answer (the median over the threads);
- Slack calls per turn: mean and max over the threads (every call about the thread: the
  reaction, the stream, the working message, the answer).

`--slack-limits` has the fake enforce Slack's documented limits (one post per second per
channel with short bursts, the methods' tiers, the stream-append limit). The load average
is printed with each measurement. Exit status 0 when the median time to first visible
progress at the largest thread count is at most 0.5 s for every model delay.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bot` and `tests` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_slack import DEFAULT_URL, TOKEN, Bench, mention_event, prepare_schema
from bot.slack.app import services_of_app
from tests.fakes.model_server import FakeModelServer, Turn, call, calls, say
from tests.fakes.slack_server import FakeSlack, SlackLimits

FIRST_PROGRESS_TARGET_S = 0.5
VISIBLE = {
    "reactions.add",
    "chat.postMessage",
    "chat.startStream",
    "assistant.threads.setStatus",
}
DATABASE = "shop-bench"


def responder(body: dict[str, Any]) -> Turn:
    if body["messages"][-1].get("role") == "tool":
        return say("Answer: the shop has its tables.")
    return calls(call("list_tables", {"database": DATABASE}))


def serve_fakes(connection: Connection, limits: bool) -> None:
    """The child process: the fake Slack and model; reports the calls it saw on request."""
    logging.basicConfig(level=logging.WARNING)

    async def run() -> None:
        async with (
            FakeSlack(
                users={"U0BENCH": "Europe/Paris"}, token=TOKEN, checks_messages=False
            ) as slack,
            FakeModelServer(responder=responder) as model,
        ):
            if limits:
                slack.enforce_limits(SlackLimits())
            connection.send((slack.api_url, model.url))
            loop = asyncio.get_running_loop()
            while True:
                order = await loop.run_in_executor(None, connection.recv)
                if order == "stop":
                    return
                if isinstance(order, float):  # the model's delay for the next run
                    model.delay_s = order
                    slack.calls.clear()
                    slack.messages.clear()
                    connection.send("ok")
                elif order == "calls":
                    connection.send(called(slack))

    asyncio.run(run())


def called(slack: FakeSlack) -> list[tuple[str, str, float, bool, str]]:
    """(method, thread ts, when, accepted, text) of each call about a thread."""
    thread_of = {m.ts: m.thread_ts or m.ts for m in slack.messages}
    rows = []
    for c in slack.calls:
        args = c.args
        thread = args.get("thread_ts") or args.get("timestamp") or thread_of.get(args.get("ts"))
        if not thread:
            continue
        text = str(args.get("text") or "")
        for chunk in args.get("chunks") or []:
            if isinstance(chunk, dict) and chunk.get("type") == "markdown_text":
                text += chunk.get("text", "")
        accepted = not (c.rate_limited or c.failed)
        rows.append((c.method, str(thread), c.at, accepted, text))
    return rows


@dataclass
class Measured:
    first_visible_s: float  # median over threads
    answer_s: float
    calls_mean: float
    calls_max: int


async def measure(bench: Bench, fakes: Connection, threads: int, delay: float) -> Measured:
    loop = asyncio.get_running_loop()
    fakes.send(delay)
    await loop.run_in_executor(None, fakes.recv)
    sent: dict[str, float] = {}

    async def mention(number: int) -> None:
        bench._ts += 1
        body, headers, ts = mention_event(bench._ts, f"question {number}")
        sent[ts] = time.monotonic()
        async with bench.http.post(bench.url, data=body, headers=headers) as response:
            assert response.status == 200, response.status

    await asyncio.gather(*(mention(i) for i in range(threads)))
    deadline = time.monotonic() + 120 + 4 * delay
    while True:
        await services_of_app(bench.app).queues.drain()
        fakes.send("calls")
        rows = await loop.run_in_executor(None, fakes.recv)
        answered = {t for m, t, _, ok, text in rows if ok and text.startswith("Answer:")}
        if answered >= set(sent):
            break
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(answered)} of {threads} threads answered")
        await asyncio.sleep(0.1)
    await asyncio.sleep(0.2)  # the last closing calls (a working message's removal)
    fakes.send("calls")
    rows = await loop.run_in_executor(None, fakes.recv)
    first, answer, counts = [], [], []
    for ts, at in sent.items():
        mine = [r for r in rows if r[1] == ts]
        counts.append(len(mine))
        first.append(min(r[2] for r in mine if r[3] and r[0] in VISIBLE) - at)
        answer.append(min(r[2] for r in mine if r[3] and r[4].startswith("Answer:")) - at)
    return Measured(
        statistics.median(first), statistics.median(answer), statistics.mean(counts), max(counts)
    )


def spread(values: list[float], unit: str = "s") -> str:
    ordered = sorted(values)
    return f"{ordered[0]:.3f} / {statistics.median(ordered):.3f} / {ordered[-1]:.3f} {unit}"


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 50])
    parser.add_argument("--model-delays", type=float, nargs="+", default=[0.2, 2.0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--url", default=DEFAULT_URL)
    parser.add_argument("--slack-limits", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("asyncmy").setLevel(logging.ERROR)

    url = await prepare_schema(args.url)
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    fakes = context.Process(target=serve_fakes, args=(child, args.slack_limits), daemon=True)
    fakes.start()
    met = True
    try:
        slack_url, model_url = await asyncio.get_running_loop().run_in_executor(None, parent.recv)
        with tempfile.TemporaryDirectory() as state:
            bench = Bench(slack_url, model_url, url, Path(state) / "state")
            await bench.start()
            try:
                await measure(bench, parent, max(args.threads), 0.05)  # warm the pools
                print("load average: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
                print(
                    "threads  model   first visible (median)    answer (median)"
                    "           calls/turn mean  max"
                )
                for delay in args.model_delays:
                    for threads in args.threads:
                        runs = [
                            await measure(bench, parent, threads, delay) for _ in range(args.runs)
                        ]
                        first = [r.first_visible_s for r in runs]
                        print(
                            f"{threads:7d}  {delay:4.1f} s  {spread(first)}  "
                            f"{spread([r.answer_s for r in runs])}  "
                            f"{statistics.mean(r.calls_mean for r in runs):6.1f}  "
                            f"{max(r.calls_max for r in runs):4d}"
                            f"   load {os.getloadavg()[0]:.2f}"
                        )
                        if threads == max(args.threads):
                            met = met and statistics.median(first) <= FIRST_PROGRESS_TARGET_S
            finally:
                await bench.stop()
    finally:
        parent.send("stop")
        fakes.join(timeout=10)
    print(
        f"first visible progress at {max(args.threads)} threads ≤ "
        f"{FIRST_PROGRESS_TARGET_S} s: {'yes' if met else 'NO'}"
    )
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
