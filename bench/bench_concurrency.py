"""Concurrency benchmark: 50 concurrent `SELECT SLEEP(0.2)` through the pools.

    python bench/bench_concurrency.py [--url mysql://root@127.0.0.1:3306/test]

Pool size 50. Run once with an empty pool (50 connections opened side by side) and once warm.
Serialised, the 50 sleeps would take 10 s; the target is well under 1 s. Exits 1 if missed.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `bot` and `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.datasets import DEFAULT_URL
from bot.config import DatabaseConfig, Limits
from bot.db import DatabaseRegistry

CONCURRENT = 50
SLEEP_S = 0.2
TARGET_S = 1.0


async def one_round(registry: DatabaseRegistry) -> float:
    database = registry.get("bench")
    started = time.perf_counter()
    await asyncio.gather(
        *(
            database.execute([f"SELECT SLEEP({SLEEP_S})"], read_only=True, limit=1)
            for _ in range(CONCURRENT)
        )
    )
    return time.perf_counter() - started


async def main(url: str) -> int:
    config = DatabaseConfig(name="bench", url=url, environment="development")
    registry = DatabaseRegistry([config], Limits(pool_size=CONCURRENT))
    cold = await one_round(registry)
    warm = await one_round(registry)
    await registry.close()
    print(f"{CONCURRENT} concurrent SELECT SLEEP({SLEEP_S}), pool size {CONCURRENT}")
    print(f"cold pool (opens {CONCURRENT} connections): {cold:.3f} s")
    print(f"warm pool:                                {warm:.3f} s")
    print(f"serialised would be {CONCURRENT * SLEEP_S:.1f} s; target < {TARGET_S:g} s")
    met = max(cold, warm) < TARGET_S
    print("target met" if met else "TARGET MISSED")
    return 0 if met else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=DEFAULT_URL)
    raise SystemExit(asyncio.run(main(parser.parse_args().url)))
