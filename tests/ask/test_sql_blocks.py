"""Which parts of an answer are SQL a person can run, and on which database."""

from __future__ import annotations

import asyncio
import time

import pytest

from bot.ask.sql_blocks import find_sql_blocks, find_sql_blocks_off_loop

DATABASES = ["shop-staging", "shop-prod", "billing-dev"]


def test_two_sql_blocks_are_found_in_order():
    answer = (
        "On shop-staging, count the orders:\n```sql\nSELECT COUNT(*) FROM orders\n```\n\n"
        "Then on billing-dev:\n```sql\nSELECT * FROM invoices LIMIT 5;\n```"
    )
    blocks = find_sql_blocks(answer, DATABASES)
    assert [b.sql for b in blocks] == [
        "SELECT COUNT(*) FROM orders",
        "SELECT * FROM invoices LIMIT 5;",
    ]
    assert [b.database for b in blocks] == ["shop-staging", "billing-dev"]
    assert answer[blocks[0].start : blocks[0].end].startswith("```sql")


BLOCKS = [
    # (answer, expected sql list, reason)
    ("```sql\nSELECT 1\n```", ["SELECT 1"], "a block fenced as sql"),
    ("```mysql\nSHOW TABLES\n```", ["SHOW TABLES"], "mysql is SQL too"),
    ("```\nSELECT id FROM t\n```", ["SELECT id FROM t"], "an unlabelled block the parser reads"),
    ("```\npip install dbagent\n```", [], "an unlabelled block that is not SQL"),
    ("```python\nprint('SELECT 1')\n```", [], "a block in another language"),
    ("```sql\n\n```", [], "an empty block offers nothing to run"),
    ("Use `SELECT 1` inline.", [], "inline code is not a block"),
    ("```sql\nUPDATE t SET a = 1\n```", ["UPDATE t SET a = 1"], "writes get buttons too"),
]


@pytest.mark.parametrize(("answer", "expected", "reason"), BLOCKS, ids=[b[2] for b in BLOCKS])
def test_what_counts_as_an_sql_block(answer, expected, reason):
    assert [b.sql for b in find_sql_blocks(answer, DATABASES)] == expected, reason


def test_an_answer_that_names_no_database_leaves_the_choice_to_the_person():
    [block] = find_sql_blocks("```sql\nSELECT 1\n```", DATABASES)
    assert block.database is None


def test_an_answer_that_names_two_databases_before_one_block_leaves_the_choice_open():
    answer = "Compare shop-staging with shop-prod:\n```sql\nSELECT 1\n```"
    [block] = find_sql_blocks(answer, DATABASES)
    assert block.database is None


def test_with_one_database_configured_it_is_the_target():
    [block] = find_sql_blocks("```sql\nSELECT 1\n```", ["only-db"])
    assert block.database == "only-db"


def test_a_name_inside_a_longer_name_does_not_count():
    answer = "On shop-staging-old:\n```sql\nSELECT 1\n```"
    [block] = find_sql_blocks(answer, DATABASES)
    assert block.database is None


@pytest.mark.parametrize(
    ("label", "reason"),
    [
        ("sql", "a labelled block over the limit would be refused when run"),
        ("", "an unlabelled block over the limit is not even classified"),
    ],
)
def test_a_block_longer_than_max_sql_chars_gets_no_buttons(label: str, reason: str) -> None:
    long_sql = "SELECT " + ", ".join(["1"] * 600)
    answer = f"```{label}\n{long_sql}\n```\n```sql\nSELECT 2\n```"
    found = find_sql_blocks(answer, DATABASES, max_sql_chars=1_000)
    assert [block.sql for block in found] == ["SELECT 2"], reason


async def test_a_long_answer_is_searched_without_holding_the_event_loop() -> None:
    answer = "\n".join(f"```\nSELECT a, b FROM t{n} WHERE x = {n}\n```" for n in range(300))
    gaps: list[float] = []
    done = asyncio.Event()

    async def tick() -> None:
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    ticker = asyncio.create_task(tick())
    started = time.perf_counter()
    found = await find_sql_blocks_off_loop(answer, DATABASES)
    elapsed = time.perf_counter() - started
    done.set()
    await ticker
    assert len(found) == 300
    # The loop kept running while the blocks were classified: no stall near the whole time.
    assert max(gaps) < elapsed / 2
