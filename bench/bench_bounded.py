"""What bounding an approved change costs: the same UPDATE of 1, 1,000 and 10,000 rows run in
autocommit (as before), by hand on one connection (the floors), and through bot.db.bounded
(transaction, locking before-image read, after-image read by key, catalog reads for the key).

The two floors, measured in the same run:
- "hand: lock" — START TRANSACTION, the `SELECT … FOR UPDATE` by the UPDATE's WHERE, the
  UPDATE, COMMIT;
- "hand: images" — the same plus the after-image read by hand: `SELECT … WHERE id IN (…)
  FOR UPDATE` with the keys joined directly, then COMMIT.

    python bench/bench_bounded.py [--url mysql://root@127.0.0.1:3306/test] [--runs 5]

Prints min / median / max milliseconds of each way per size, then the bounded run's median
as a multiple of each floor's and of plain autocommit's (its overhead), and the load average
before and after. The bounded run counts what the server writes (SHOW SESSION STATUS before
and after the statement, bot.db.bounded) as an approved change does.
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

import asyncmy

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


def _load() -> str:
    with open("/proc/loadavg") as loadavg:
        return " ".join(loadavg.read().split()[:3])


def by_hand(
    connection: asyncmy.Connection, size: int, *, after_image: bool
) -> Callable[[], Awaitable[object]]:
    """The floor: what the bounded run does, written by hand on one open connection."""

    async def work() -> None:
        async with connection.cursor() as cursor:
            await cursor.execute("START TRANSACTION")
            await cursor.execute(f"SELECT * FROM items WHERE id <= {size} FOR UPDATE")
            before = await cursor.fetchall()
            await cursor.execute(f"UPDATE items SET qty = qty + 1 WHERE id <= {size}")
            if after_image:
                keys = ", ".join([str(row[0]) for row in before])
                await cursor.execute(f"SELECT * FROM items WHERE id IN ({keys}) FOR UPDATE")
                await cursor.fetchall()
            await cursor.execute("COMMIT")

    return work


async def main(url: str, runs: int) -> None:
    await prepare(url)
    print(f"load average {_load()}")
    config = DatabaseConfig(name="bench", url=schema_url(url, SCHEMA), environment="development")
    database = Database(config, Limits(statement_timeout_s=120))
    hand = await connect(url, SCHEMA)
    measure = timed(runs)

    async def nothing(run: BoundedRun) -> None:
        return None

    medians: dict[tuple[int, str], float] = {}
    try:
        for size in SIZES:
            sql = f"UPDATE items SET qty = qty + 1 WHERE id <= {size}"

            async def plain(sql: str = sql) -> None:
                await database.execute([sql], read_only=False, limit=1)

            async def bounded(sql: str = sql, size: int = size) -> None:
                step = WriteStep(sql, size, plan_row_change(sql, 10_000))
                done = await run_bounded(
                    database, [step], max_undo_rows=10_000, before_commit=nothing
                )
                assert len(done.images[0].after) == size, done.undo_reason

            ways = (
                ("autocommit", plain),
                ("hand: lock", by_hand(hand, size, after_image=False)),
                ("hand: images", by_hand(hand, size, after_image=True)),
                ("bounded+undo", bounded),
            )
            for name, work in ways:
                timings = await measure(work)
                medians[size, name] = statistics.median(timings)
                print(
                    f"{size:>6} rows  {name:<13} min {min(timings):8.1f}  "
                    f"median {statistics.median(timings):8.1f}  max {max(timings):8.1f} ms"
                )
        for size in SIZES:
            bot = medians[size, "bounded+undo"]
            print(
                f"{size:>6} rows  bounded+undo = {bot / medians[size, 'hand: images']:.2f}x "
                f"hand: images, {bot / medians[size, 'hand: lock']:.2f}x hand: lock, "
                f"{bot / medians[size, 'autocommit']:.2f}x autocommit (medians)"
            )
        print(f"load average {_load()}")
    finally:
        hand.close()
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
