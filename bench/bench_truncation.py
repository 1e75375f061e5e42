"""Truncation benchmark: a 1,000,000-row result read with limit 50, against `LIMIT 51`.

    python bench/bench_truncation.py [--url mysql://root@127.0.0.1:3306/test] [--runs 30]

Builds dbagent_bench.events (1,000,000 rows) on first use. Prints the median time and the peak
Python memory (tracemalloc) of each way, and a naive buffered fetchall for contrast.
Targets: time ratio at most 3, memory growth at most 30 MB. Exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `bot` and `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from asyncmy.cursors import SSCursor

from bench.datasets import DEFAULT_URL, LARGE_ROWS, connect, create_large_table, schema_url
from bot.config import DatabaseConfig, Limits
from bot.db import Database, DatabaseRegistry
from bot.db.rows import read_rows

SCHEMA = "dbagent_bench"
QUERY = "SELECT id, customer_id, amount, note, created_at FROM events"
LIMIT = 50
MAX_RATIO = 3.0
MAX_GROWTH_MB = 30.0
PAUSE_S = 0.01


async def median_ms(
    first: Callable[[], Awaitable[object]], second: Callable[[], Awaitable[object]], runs: int
) -> tuple[float, float]:
    """Median times of two ways, run alternately so both meet the same machine noise, each
    after a short pause so one run's server-side clean-up is not billed to the next."""
    for _ in range(3):
        await first()  # warm the pool and the server's buffer pool
        await second()
    timings: tuple[list[float], list[float]] = ([], [])
    for _ in range(runs):
        for work, into in ((first, timings[0]), (second, timings[1])):
            await asyncio.sleep(PAUSE_S)
            started = time.perf_counter()
            await work()
            into.append((time.perf_counter() - started) * 1000)
    return statistics.median(timings[0]), statistics.median(timings[1])


async def peak_mb(work: Callable[[], Awaitable[object]], repeat: int = 1) -> float:
    """Peak Python allocation above what was held before, over `repeat` runs (with pauses, so
    the connections opened in the background after capped runs are counted too)."""
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        for _ in range(repeat):
            await work()
            await asyncio.sleep(PAUSE_S)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return (peak - before) / 1e6


def rss_mb() -> float:
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * 4096 / 1e6


async def main(url: str, runs: int) -> int:
    if await create_large_table(url, SCHEMA):
        print(f"built {SCHEMA}.events ({LARGE_ROWS} rows)")
    config = DatabaseConfig(name="bench", url=schema_url(url, SCHEMA), environment="development")
    registry = DatabaseRegistry([config], Limits())
    database: Database = registry.get("bench")

    async def capped() -> object:
        execution = await database.execute([QUERY], read_only=True, limit=LIMIT)
        assert execution.last_result is not None and execution.last_result.truncated
        return execution

    async def limited() -> object:
        execution = await database.execute(
            [f"{QUERY} LIMIT {LIMIT + 1}"], read_only=True, limit=LIMIT
        )
        assert execution.last_result is not None and execution.last_result.truncated
        return execution

    async def first_rows_raw(sql: str) -> float:
        """The driver alone: time to the first 51 rows, no session set-up, no rendering."""
        connection = await connect(schema_url(url, SCHEMA))
        try:
            cursor = connection.cursor(SSCursor)
            started = time.perf_counter()
            await cursor.execute(sql)
            await read_rows(cursor, LIMIT + 1)
            return (time.perf_counter() - started) * 1000
        finally:
            connection.close()  # not read to the end: drop it (outside the timing)

    async def raw_floor() -> tuple[float, float]:
        unbounded, limited_raw = [], []
        for _ in range(runs):
            await asyncio.sleep(PAUSE_S)
            unbounded.append(await first_rows_raw(QUERY))
            await asyncio.sleep(PAUSE_S)
            limited_raw.append(await first_rows_raw(f"{QUERY} LIMIT {LIMIT + 1}"))
        return statistics.median(unbounded), statistics.median(limited_raw)

    async def naive() -> object:
        connection = await connect(schema_url(url, SCHEMA))
        try:
            async with connection.cursor() as cursor:
                await cursor.execute(QUERY)
                rows = await cursor.fetchall()
                return rows[:LIMIT]
        finally:
            connection.close()

    capped_ms, limited_ms = await median_ms(capped, limited, runs)
    raw_unbounded_ms, raw_limited_ms = await raw_floor()
    capped_peak = await peak_mb(capped, repeat=5)
    limited_peak = await peak_mb(limited, repeat=5)
    rss_before = rss_mb()
    capped_rss_runs = [await capped() for _ in range(20)]
    capped_rss = rss_mb() - rss_before
    del capped_rss_runs
    naive_started = time.perf_counter()
    await naive()
    naive_ms = (time.perf_counter() - naive_started) * 1000
    naive_peak = await peak_mb(naive)
    await registry.close()

    ratio = capped_ms / limited_ms
    print(
        f"query: {QUERY}  ({LARGE_ROWS:,} rows), limit {LIMIT}, median of {runs} runs;"
        " peak over 5 runs"
    )
    print(f"{'way':<32}{'time ms':>10}{'peak MB':>10}")
    print(f"{'execute, limit 50 (capped)':<32}{capped_ms:>10.2f}{capped_peak:>10.2f}")
    print(f"{'execute, SQL LIMIT 51':<32}{limited_ms:>10.2f}{limited_peak:>10.2f}")
    print(f"{'naive buffered fetchall':<32}{naive_ms:>10.0f}{naive_peak:>10.1f}")
    print(
        f"driver floor (raw asyncmy, first 51 rows): unbounded {raw_unbounded_ms:.2f} ms,"
        f" LIMIT 51 {raw_limited_ms:.2f} ms: the server streaming the unbounded result is"
        " most of the difference"
    )
    print(f"time ratio capped / LIMIT 51: {ratio:.2f} (target <= {MAX_RATIO:g})")
    print(
        f"memory growth, capped: {capped_peak:.2f} MB traced (target <= {MAX_GROWTH_MB:g});"
        f" RSS change over 20 more capped runs: {capped_rss:+.1f} MB"
    )
    met = ratio <= MAX_RATIO and capped_peak <= MAX_GROWTH_MB
    print("targets met" if met else "TARGET MISSED")
    return 0 if met else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=DEFAULT_URL)
    parser.add_argument("--runs", type=int, default=60)
    arguments = parser.parse_args()
    raise SystemExit(asyncio.run(main(arguments.url, arguments.runs)))
