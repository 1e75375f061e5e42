"""What observing a turn costs: the hooks of one read turn, against the same work unobserved.

    python bench/bench_observability.py [--turns 20000] [--runs 3]

A read turn calls the hooks of bot/observability/observe.py: the turn itself, two model
calls, one tool call, the guard's decision, one audit record, one database statement, six
Slack API attempts and the first progress. Here each hook wraps a coroutine that does
nothing, so what is timed is the hooks alone; the baseline is the same coroutines called
bare, in the same run. Three ways:

- metrics: Prometheus counters in this process (tracing off: OpenTelemetry's no-op tracer);
- metrics+traces: spans recorded too (an SDK provider, spans batched as the bot batches them,
  to an in-memory exporter instead of the network);
- workers: prometheus_client's multiprocess mode (what `serve --workers N` runs), in a child
  process with PROMETHEUS_MULTIPROC_DIR set before the library loads.

Prints the load average and, per way, min / median / max over `--runs` runs of the hooks'
cost per turn in microseconds (observed minus baseline).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SLACK_ATTEMPTS = 6


async def _nothing(*args: object) -> object:
    return SimpleNamespace(usage=SimpleNamespace(prompt_tokens=900, completion_tokens=40))


def _observed() -> object:
    from bot.observability import metrics, observe

    model_call = observe.model_call(_nothing)
    tool_call = observe.tool_call(_nothing)
    statement = observe.db_statement(_nothing)
    client = SimpleNamespace(model="bench-model")
    prepared = SimpleNamespace(tool=SimpleNamespace(name="execute_query"))
    session = SimpleNamespace(pool=SimpleNamespace(database_name="shop"), read_only=True)
    decision = SimpleNamespace()

    async def turn() -> None:
        progress = observe.FirstProgress()
        with observe.turn("T:C:1.1", "agent") as current:
            await model_call(client, [], [])
            await tool_call(prepared, None)
            observe.guard_decided("read_only", decision)
            await statement(session, "SELECT 1", None)
            observe.statement_recorded("read_only", "executed", None)
            await model_call(client, [], [])
            current.ended(decision)
        progress.shown()
        for _ in range(SLACK_ATTEMPTS):
            metrics.slack_call("chat.postMessage", "ok")

    return turn


async def _time(turn: object, count: int) -> float:
    started = time.perf_counter()
    for _ in range(count):
        await turn()  # type: ignore[operator]
    return time.perf_counter() - started


async def _measure(count: int, traces: bool) -> float:
    """Microseconds the hooks add to one turn."""
    if traces:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
            InMemorySpanExporter,
        )

        from bot.observability import tracing

        provider = TracerProvider()
        exporter = InMemorySpanExporter()
        provider.add_span_processor(BatchSpanProcessor(exporter))  # as the bot exports
        tracing.use_provider(provider)
    observed = _observed()

    async def bare() -> None:  # the same four awaits: two model calls, a tool, a statement
        for _ in range(4):
            await _nothing()

    await _time(observed, 200)  # warm up
    await _time(bare, 200)
    hooked = await _time(observed, count)
    baseline = await _time(bare, count)
    if traces:
        exporter.clear()
    return (hooked - baseline) / count * 1e6


def _child(way: str, count: int) -> float:
    environment = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="bench-metrics-") as directory:
        if way == "workers":
            environment["PROMETHEUS_MULTIPROC_DIR"] = directory
        output = subprocess.run(
            [sys.executable, __file__, "--child", way, "--turns", str(count)],
            env=environment,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    return float(json.loads(output)["us_per_turn"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--child", choices=["metrics", "metrics+traces", "workers"])
    args = parser.parse_args()
    if args.child:
        cost = asyncio.run(_measure(args.turns, traces=args.child == "metrics+traces"))
        print(json.dumps({"us_per_turn": cost}))
        return
    print("load average: " + " ".join(f"{load:.2f}" for load in os.getloadavg()))
    print(f"{args.turns:,} turns per run, {args.runs} runs; the hooks' cost per turn:")
    for way in ("metrics", "metrics+traces", "workers"):
        costs = sorted(_child(way, args.turns) for _ in range(args.runs))
        print(
            f"  {way:15s} min {costs[0]:7.1f} µs  median {statistics.median(costs):7.1f} µs  "
            f"max {costs[-1]:7.1f} µs"
        )


if __name__ == "__main__":
    main()
