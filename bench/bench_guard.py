"""Guard benchmark: what deciding a classified statement costs, beside classifying it.

    python bench/bench_guard.py [--rounds 5] [--number 5000]

For each kind of statement — an ordinary read of the own schema, a SHOW, a read of
information_schema (confined through its filter) and a refused SHOW — times `decide()`
(the guard, with the catalog confinement) and, in the same run on the same text,
`classify()`. Rounds alternate between the two; time is the thread's CPU time. Prints
min / median / max µs per call over the rounds, and decide as a share of classify: the
confinement must leave ordinary reads as fast as they were (a few µs beside a classify of
tens of µs, and a round trip to the server of hundreds).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `bot` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.config import DatabaseConfig
from bot.db.reach import ServerReach
from bot.guard import Decision, decide
from bot.sql.risk import Classification, classify

STATEMENTS = {
    "read": "SELECT o.id, o.total FROM orders o JOIN customers c ON c.id = o.customer_id "
    "WHERE o.status = 'paid' ORDER BY o.id LIMIT 50",
    "show": "SHOW FULL COLUMNS FROM orders",
    "catalog read": "SELECT TABLE_NAME, TABLE_ROWS FROM information_schema.TABLES "
    "WHERE TABLE_SCHEMA = DATABASE() ORDER BY TABLE_ROWS DESC",
    "refused show": "SHOW DATABASES",
}


def per_call_us(call: Callable[[], object], number: int) -> float:
    start = time.thread_time()
    for _ in range(number):
        call()
    return (time.thread_time() - start) / number * 1e6


def spread(values: list[float]) -> str:
    return f"{min(values):6.1f} / {statistics.median(values):6.1f} / {max(values):6.1f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--number", type=int, default=5000)
    args = parser.parse_args(argv)
    database = DatabaseConfig.model_validate(
        {"name": "shop", "url": "mysql://bot@db/shop", "environment": "staging"}
    )
    reach = ServerReach("shop", 0, programs_read=True)
    print(f"{'statement':14s} {'decide µs (min/med/max)':>26s} {'classify µs':>24s}  share")
    for name, sql in STATEMENTS.items():
        classified = classify(sql)
        decided: list[float] = []
        classified_us: list[float] = []

        def guard(judged: Classification = classified) -> Decision:
            return decide(judged, database, granted=False, reach=reach)

        def classifier(text: str = sql) -> Classification:
            return classify(text)

        for _ in range(args.rounds):
            decided.append(per_call_us(guard, args.number))
            classified_us.append(per_call_us(classifier, args.number // 5))
        share = statistics.median(decided) / statistics.median(classified_us)
        print(f"{name:14s} {spread(decided):>26s} {spread(classified_us):>24s}  {share:5.0%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
