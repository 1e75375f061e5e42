"""Impact benchmark: the time measuring a change adds before its approval card is posted.

    python bench/bench_impact.py [--url mysql://root@127.0.0.1:3306/test] [--runs 3]

On a 1,000,000-row table (bench/datasets.py builds it once and keeps it), measures the
impact (reach look-up, EXPLAIN, exact COUNT, preview) of two UPDATEs that both change 200
rows: one whose WHERE uses the primary key (a range read) and one whose WHERE has no index
(a full scan of the million rows). Each case runs `--runs` times with a fresh look-up of
routines, triggers and foreign keys, and `--runs` times with the snapshot kept (a card within
`SNAPSHOT_TTL_S` of another); min/median/max are printed in milliseconds.
`[approvals] impact_timeout_s` is raised to 60 s here so the full scan is counted exactly
rather than estimated.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.datasets import DEFAULT_URL, LARGE_ROWS, create_large_table, schema_url
from bot.config import Approvals, DatabaseConfig, Limits
from bot.db import DatabaseRegistry
from bot.db.impact import measure
from bot.db.reach import SNAPSHOT_TTL_S, look_up
from bot.sql.risk import classify

SCHEMA = "dbagent_bench"
CASES = {
    "with an index (primary key range)": (
        "UPDATE events SET note = 'x' WHERE id BETWEEN 1000 AND 1199"
    ),
    "without an index (full scan)": "UPDATE events SET note = 'x' WHERE customer_id = 42",
}


async def _run(url: str, runs: int) -> None:
    built = await create_large_table(url, SCHEMA)
    print(f"table {SCHEMA}.events: {LARGE_ROWS:,} rows ({'built now' if built else 'kept'})")
    config = DatabaseConfig(name="bench", url=schema_url(url, SCHEMA), environment="staging")
    registry = DatabaseRegistry([config], Limits(statement_timeout_s=120))
    approvals = Approvals(impact_timeout_s=60)
    database = registry.get("bench")
    try:
        for name, sql in CASES.items():
            classification = classify(sql)
            for look, max_age_s in (("fresh look-up", 0.0), ("kept snapshot", SNAPSHOT_TTL_S)):
                timings = []
                for _ in range(runs):
                    started = time.perf_counter()
                    reach = await look_up(database, programs=True, max_age_s=max_age_s)
                    impact = await measure(database, classification, reach, approvals)
                    timings.append((time.perf_counter() - started) * 1000)
                (statement,) = impact.statements
                print(
                    f"{name}, {look}: min {min(timings):.1f} ms, "
                    f"median {statistics.median(timings):.1f} ms, "
                    f"max {max(timings):.1f} ms — {statement.rows} rows ({statement.count}), "
                    f"access {statement.access}, index {statement.index}, "
                    f"full scan rows {statement.full_scan_rows}"
                )
    finally:
        await registry.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=DEFAULT_URL)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    asyncio.run(_run(args.url, args.runs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
