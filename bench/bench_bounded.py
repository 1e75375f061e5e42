"""What bounding an approved change costs: the same UPDATE of 1, 1,000 and 10,000 rows run in
autocommit (as before) and through bot.db.bounded (transaction, locking before-image read,
after-image read by key, catalog reads for the key), each followed by an update back.

    python bench/bench_bounded.py [--url mysql://root@127.0.0.1:3306/test] [--runs 5]

Prints min / median / max milliseconds of each way per size.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `bot` and `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.datasets import DEFAULT_URL, connect, schema_url
from bot.config import DatabaseConfig, Limits
from bot.db import Database
from bot.db.bounded import BoundedRun, WriteStep, run_bounded
from bot.sql.undo import plan_row_change

SCHEMA = "dbagent_bench_bounded"
ROWS = 20_000
SIZES = (1, 1_000, 10_000)


async def prepare(url: str) -> None:
    connection = await connect(url, None)
    try:
        async with connection.cursor() as cursor:
            await cursor.execute(f"CREATE DATABASE IF NOT EXISTS {SCHEMA}")
            await cursor.execute(
                f"CREATE TABLE IF NOT EXISTS {SCHEMA}.items "
                "(id INT PRIMARY KEY, grp INT NOT NULL, qty INT NOT NULL, KEY (grp))"
            )
            await cursor.execute(f"DELETE FROM {SCHEMA}.items")
            await cursor.execute(
                f"INSERT INTO {SCHEMA}.items SELECT seq, seq % 20, 0 FROM seq_1_to_{ROWS}"
            )
    finally:
        connection.close()


def timed(runs: int) -> Callable[[Callable[[], Awaitable[object]]], Awaitable[list[float]]]:
    async def measure(work: Callable[[], Awaitable[object]]) -> list[float]:
        await work()  # warm the connection path and the buffer pool
        timings = []
        for _ in range(runs):
            started = time.perf_counter()
            await work()
            timings.append((time.perf_counter() - started) * 1000)
        return timings

    return measure


async def main(url: str, runs: int) -> None:
    await prepare(url)
    config = DatabaseConfig(name="bench", url=schema_url(url, SCHEMA), environment="development")
    database = Database(config, Limits(statement_timeout_s=120))
    measure = timed(runs)

    async def nothing(run: BoundedRun) -> None:
        return None

    try:
        for size in SIZES:
            sql = f"UPDATE items SET qty = qty + 1 WHERE id <= {size}"

            async def plain(sql: str = sql) -> None:
                await database.execute([sql], read_only=False, limit=1)

            async def bounded(sql: str = sql, size: int = size) -> None:
                step = WriteStep(sql, size, plan_row_change(sql, 10_000))
                await run_bounded(database, [step], max_undo_rows=10_000, before_commit=nothing)

            for name, work in (("autocommit", plain), ("bounded+undo", bounded)):
                timings = await measure(work)
                print(
                    f"{size:>6} rows  {name:<13} min {min(timings):8.1f}  "
                    f"median {statistics.median(timings):8.1f}  max {max(timings):8.1f} ms"
                )
    finally:
        await database.close()
        connection = await connect(url, None)
        async with connection.cursor() as cursor:
            await cursor.execute(f"DROP DATABASE IF EXISTS {SCHEMA}")
        connection.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=DEFAULT_URL)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(main(args.url, args.runs))
