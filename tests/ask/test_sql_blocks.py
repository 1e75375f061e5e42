"""Which parts of an answer are SQL a person can run, and on which database."""

from __future__ import annotations

import pytest

from bot.ask.sql_blocks import find_sql_blocks

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
