"""Masked columns benchmark: classification + lineage cost per statement, before and after.

    python bench/bench_masking.py [--seconds 1.0]

Over the classifier's corpus (bench/bench_classify.py), in the same run and on the same
texts: "before" is the risk classifier alone, as every statement paid before masking
existed; "after" is the classifier plus the masking plan of each statement
(bot.sql.masking: parse, qualify against the schema, lineage of every output, the
inference checks) against a schema where `customers.email` is masked. "unmasked" is the
classifier plus the plan on a database where nothing is masked (the check returns at
once). The schema snapshot (the `Masker`) is built once, as the bot keeps it for
`FACTS_TTL_S`; its build time for a schema of 500 tables is printed too.

Three runs; each prints µs per statement (thread CPU time, the best of alternating rounds),
then min / median / max over the runs, with the load average.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_classify import CORPUS
from bot.sql.lexical import statement_texts
from bot.sql.masking import Masker, MaskRules, SchemaFacts, TableFacts
from bot.sql.risk import classify

TABLES = {
    "customers": ("id", "email", "name", "country", "tier"),
    "orders": ("id", "customer_id", "status", "total", "created_at", "note", "vip"),
    "products": ("id", "name", "price"),
    "order_items": ("order_id", "product_id", "quantity"),
    "events": ("id", "payload"),
    "t1": ("a",),
    "t2": ("b",),
    "audit_log": ("id", "actor", "action"),
    "sessions": ("id", "expires_at"),
    "daily_totals": ("day", "total"),
    "settings": ("name", "value"),
    "stock": ("sku", "qty"),
    "stock_moves": ("sku", "delta"),
    "staging_events": ("id",),
    "tmp_import": ("id",),
}


def facts(extra_tables: int = 0) -> SchemaFacts:
    tables = {("shop", name): TableFacts(columns) for name, columns in TABLES.items()}
    for index in range(extra_tables):
        columns = tuple(f"c{n}" for n in range(12))
        tables[("shop", f"filler_{index}")] = TableFacts(columns, ("",) * 12)
    return SchemaFacts("shop", tables)


def _best(texts: list[str], work: Callable[[str], object], seconds: float) -> float:
    best = float("inf")
    deadline = time.thread_time() + seconds
    while True:
        started = time.thread_time()
        for text in texts:
            work(text)
        best = min(best, time.thread_time() - started)
        if time.thread_time() >= deadline:
            return best


def one_run(seconds: float) -> tuple[float, float, float, float]:
    """µs per statement: (before, after, unmasked), and ms to build a 500-table masker."""
    texts = [text for group in CORPUS.values() for sql in group for text in statement_texts(sql)]
    masked = Masker(facts(), MaskRules(("customers.email",)))
    plain = Masker(facts(), MaskRules())

    def before(text: str) -> None:
        classify(text)

    def after(text: str) -> None:
        (statement,) = classify(text).statements
        masked.plan(text, (*statement.reads, *statement.targets))

    def unmasked(text: str) -> None:
        (statement,) = classify(text).statements
        plain.plan(text, (*statement.reads, *statement.targets))

    for text in texts:
        after(text)
    best = [float("inf")] * 3
    for _ in range(3):
        for index, work in enumerate((before, after, unmasked)):
            best[index] = min(best[index], _best(texts, work, seconds / 9))
    started = time.thread_time()
    Masker(facts(500), MaskRules(("customers.email", "*.c3")))
    build_ms = (time.thread_time() - started) * 1000
    per = [b / len(texts) * 1e6 for b in best]
    return per[0], per[1], per[2], build_ms


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="time per measurement")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    logging.getLogger("sqlglot").setLevel(logging.ERROR)
    count = sum(len(statement_texts(sql)) for group in CORPUS.values() for sql in group)
    print(f"{count} statements of the classifier corpus; one thread")
    runs = []
    for run in range(1, args.runs + 1):
        load = Path("/proc/loadavg").read_text().split()[:3]
        before, after, unmasked, build = one_run(args.seconds)
        runs.append((before, after, unmasked, build))
        print(
            f"run {run}: before {before:7.1f} µs  after {after:7.1f} µs  "
            f"(x{after / before:.2f})  unmasked {unmasked:6.1f} µs  "
            f"masker of 500 tables {build:6.1f} ms   loadavg {' '.join(load)}"
        )
    for index, name in enumerate(("before", "after", "unmasked", "build ms")):
        values = [run[index] for run in runs]
        print(
            f"{name:<9} min {min(values):8.1f}  median {statistics.median(values):8.1f}  "
            f"max {max(values):8.1f}"
        )
    ratios = [run[1] / run[0] for run in runs]
    print(
        f"after/before min {min(ratios):.2f} median {statistics.median(ratios):.2f} "
        f"max {max(ratios):.2f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
