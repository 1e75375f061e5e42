"""Masked columns by lineage, one rule per row: (sql, what comes out, why).

The schema: customers(id, name, email, phone, card, notes) with email masked by a
`masked_columns` glob, phone by `*.phone`, card by `[masked]` in its comment; orders with
no masked column; views over them, one of which filters on a masked column.
"""

from __future__ import annotations

import pytest

from bot.sql.masking import (
    MASK,
    Masker,
    MaskPlan,
    MaskRules,
    Refusal,
    SchemaFacts,
    TableFacts,
    plan_masking,
)
from bot.sql.risk import TableRef

V = (
    "select `shop`.`customers`.`id` AS `id`,`shop`.`customers`.`email` AS `contact` "
    "from `shop`.`customers`"
)
FACTS = SchemaFacts(
    "shop",
    {
        ("shop", "customers"): TableFacts(
            ("id", "name", "email", "phone", "card", "notes"),
            ("", "", "", "", "card number [MASKED]", ""),
        ),
        ("shop", "orders"): TableFacts(("id", "customer_id", "total", "note")),
        ("shop", "v_contacts"): TableFacts(("id", "contact"), view=V, is_view=True),
        ("shop", "v_over_view"): TableFacts(
            ("contact",),
            view="select `v_contacts`.`contact` AS `contact` from `shop`.`v_contacts`",
            is_view=True,
        ),
        ("shop", "v_gmail"): TableFacts(
            ("id",),
            view="select `c`.`id` AS `id` from `shop`.`customers` `c` "
            "where `c`.`email` like '%gmail%'",
            is_view=True,
        ),
        ("shop", "v_hidden"): TableFacts(("id",), view="", is_view=True),
        ("shop", "v_orders"): TableFacts(
            ("id", "total"),
            view="select `o`.`id` AS `id`,`o`.`total` AS `total` from `shop`.`orders` `o`",
            is_view=True,
        ),
        ("archive", "customers"): TableFacts(("id", "email")),
    },
)
RULES = MaskRules(("customers.EMAIL", "*.phone"))

# (sql, the masked output positions with their sources, why)
MASKED = [
    ("SELECT * FROM customers", {2: "email", 3: "phone", 4: "card"}, "* in column order"),
    ("SELECT c.* FROM customers c", {2: "email", 3: "phone", 4: "card"}, "alias.*"),
    ("SELECT id, name FROM customers WHERE id = 1", {}, "no masked column read"),
    ("SELECT email AS e FROM customers", {0: "email"}, "an alias"),
    ("SELECT Email FROM Customers", {0: "email"}, "names without case"),
    ("SELECT `email` FROM `customers`", {0: "email"}, "quoted names"),
    ("SELECT CONCAT(name, email) FROM customers", {0: "email"}, "CONCAT over a masked column"),
    ("SELECT SUBSTR(email, 1, 3) FROM customers", {0: "email"}, "SUBSTR"),
    ("SELECT HEX(phone) FROM customers", {0: "phone"}, "HEX"),
    ("SELECT CAST(card AS CHAR) FROM customers", {0: "card"}, "CAST, comment marker"),
    ("SELECT CASE WHEN id > 1 THEN email END FROM customers", {0: "email"}, "CASE"),
    ("SELECT GROUP_CONCAT(email) FROM customers", {0: "email"}, "GROUP_CONCAT"),
    ("SELECT JSON_OBJECT('e', email) FROM customers", {0: "email"}, "JSON_OBJECT"),
    ("SELECT JSON_EXTRACT(notes, '$.a') FROM customers", {}, "JSON over an unmasked column"),
    ("SELECT LENGTH(email), id FROM customers", {0: "email"}, "a function of a masked value"),
    ("SELECT MAX(email) FROM customers", {0: "email"}, "an aggregate"),
    ("SELECT COUNT(email) FROM customers", {0: "email"}, "even a count of it"),
    ("SELECT FIRST_VALUE(email) OVER (ORDER BY id) FROM customers", {0: "email"}, "window fn"),
    ("SELECT e FROM (SELECT email AS e FROM customers) d", {0: "email"}, "a derived table"),
    ("WITH x AS (SELECT card FROM customers) SELECT * FROM x", {0: "card"}, "a CTE"),
    (
        "WITH a AS (SELECT phone p FROM customers), b AS (SELECT p FROM a) SELECT p FROM b",
        {0: "phone"},
        "CTE over CTE",
    ),
    ("SELECT id FROM customers UNION ALL SELECT email FROM customers", {0: "email"}, "UNION ALL"),
    ("SELECT * FROM v_contacts", {1: "email"}, "a view read from the server"),
    ("SELECT * FROM v_over_view", {0: "email"}, "a view over a view"),
    ("SELECT * FROM v_orders", {}, "a view over no masked column"),
    (
        "SELECT (SELECT email FROM customers c WHERE c.id = o.customer_id) FROM orders o",
        {0: "email"},
        "a scalar subquery",
    ),
    ("SELECT * FROM archive.customers", {1: "email"}, "a table of a read schema"),
    (
        "SELECT o.id, c.name FROM orders o JOIN customers c ON c.id = o.customer_id",
        {},
        "a join on unmasked keys",
    ),
    (
        "SELECT c.* FROM customers c JOIN orders USING (id)",
        {2: "email", 3: "phone", 4: "card"},
        "USING",
    ),
    ("SELECT id FROM customers WHERE id IN (SELECT customer_id FROM orders)", {}, "IN subquery"),
    ("SELECT name, COUNT(*) FROM customers GROUP BY name HAVING COUNT(*) > 1", {}, "grouping"),
    ("SELECT email FROM customers FOR UPDATE", {0: "email"}, "a locking read"),
    ("SELECT 1", {}, "no table"),
    ("SELECT table_name FROM information_schema.tables", {}, "the catalog holds no values"),
    ("(SELECT email FROM customers)", {0: "email"}, "in parentheses"),
]


@pytest.mark.parametrize(("sql", "masked", "why"), MASKED, ids=[row[2] for row in MASKED])
def test_outputs_over_masked_columns_are_masked(sql: str, masked: dict[int, str], why: str) -> None:
    plan = plan_masking(sql, FACTS, RULES)
    assert isinstance(plan, MaskPlan), plan
    found = {column.position: column.sources for column in plan.masked}
    assert found == {position: (f"customers.{name}",) for position, name in masked.items()}, why


# (sql, words the refusal holds, why)
REFUSED = [
    ("SELECT id FROM customers WHERE email LIKE 'a%'", "WHERE", "filter on a masked column"),
    ("SELECT id FROM customers WHERE LOWER(email) = 'x'", "WHERE", "a function of it in WHERE"),
    ("SELECT email FROM customers ORDER BY email LIMIT 1", "ORDER BY", "LIMIT probing"),
    ("SELECT email AS e FROM customers ORDER BY e", "ORDER BY", "ORDER BY an alias"),
    ("SELECT email FROM customers ORDER BY 1", "ORDER BY", "ORDER BY a position"),
    ("SELECT COUNT(*) FROM customers GROUP BY phone", "GROUP BY", "grouping"),
    ("SELECT name FROM customers GROUP BY name HAVING MAX(card) > '4'", "HAVING", "HAVING"),
    (
        "SELECT c.id FROM customers c JOIN customers d ON c.email = d.email",
        "JOIN",
        "a join on it",
    ),
    ("SELECT c.id FROM customers c JOIN archive.customers a USING (email)", "JOIN", "USING"),
    ("SELECT ROW_NUMBER() OVER (PARTITION BY email) FROM customers", "PARTITION", "window"),
    ("SELECT RANK() OVER (ORDER BY phone) FROM customers", "PARTITION", "window order"),
    (
        "SELECT SUM(id) OVER w FROM customers WINDOW w AS (PARTITION BY email)",
        "WINDOW",
        "named window",
    ),
    ("SELECT email INTO @x FROM customers", "INTO", "SELECT … INTO @var"),
    ("SELECT id, @x := email FROM customers", "@variable", "assigning it to a variable"),
    ("SELECT id FROM customers HAVING email LIKE 'a%'", "HAVING", "HAVING without GROUP BY"),
    ("SELECT id FROM customers ORDER BY FIELD(email, 'a')", "ORDER BY", "ORDER BY a function"),
    ("SELECT * FROM customers NATURAL JOIN customers c2", "JOIN", "a NATURAL join"),
    ("SELECT id FROM customers WHERE ROW(id, email) = ROW(1, 'x')", "WHERE", "a row compare"),
    (
        "WITH RECURSIVE r AS (SELECT email e FROM customers UNION ALL "
        "SELECT e FROM r WHERE e < 'm') SELECT COUNT(*) FROM r",
        "",
        "a recursive CTE",
    ),
    (
        "SELECT id FROM customers c JOIN LATERAL (SELECT c.email AS e) x ON x.e = 'a'",
        "",
        "LATERAL",
    ),
    ("SELECT DISTINCT email FROM customers", "DISTINCT", "distinct counts values"),
    ("SELECT email FROM customers UNION SELECT email FROM customers", "UNION", "UNION dedups"),
    (
        "SELECT id FROM customers WHERE id IN (SELECT id FROM customers WHERE phone = '1')",
        "WHERE",
        "a filter inside a subquery",
    ),
    ("SELECT id FROM customers WHERE email IN (SELECT 'a@b.c')", "WHERE", "IN list"),
    (
        "SELECT id FROM customers c WHERE EXISTS (SELECT 1 FROM orders o WHERE o.note = c.email)",
        "WHERE",
        "a correlated filter",
    ),
    ("SELECT 1 FROM (SELECT id FROM customers WHERE card = '4') d", "WHERE", "unused derived"),
    ("SELECT id FROM v_gmail", "view v_gmail", "a view that filters on a masked column"),
    ("SELECT id FROM v_hidden", "definition", "a view whose definition is not shown"),
    ("SELECT * FROM nowhere", "unknown", "an unknown table's *"),
    ("SELECT x FROM nowhere", "traced", "an unknown table"),
    ("SELECT /*! email */ FROM customers", "executable comment", "executable comment"),
    ("SELECT 1 /*!50000 , email */ FROM customers", "executable comment", "versioned"),
    (f"UPDATE orders SET note = '{MASK}' WHERE id = 1", "placeholder", "writing back a mask"),
    ("SELECT id FROM customers WHERE name = '[MASKED]'", "placeholder", "any case"),
    ("INSERT INTO orders (note) SELECT email FROM customers", "email", "copying it"),
    ("INSERT INTO orders SELECT * FROM customers", "* of customers", "copying * of it"),
    ("CREATE TABLE leak AS SELECT phone FROM customers", "phone", "CTAS"),
    ("UPDATE orders o JOIN customers c SET o.note = c.card", "card", "UPDATE … JOIN"),
    ("DELETE FROM customers WHERE email LIKE 'a%'", "email", "a change picking by it"),
    ("CREATE VIEW v AS SELECT id FROM v_contacts", "v_contacts", "a view over one"),
    ("EXPLAIN SELECT id FROM customers WHERE email = 'x'", "WHERE", "a plan of a filter"),
    ("EXPLAIN FORMAT=JSON SELECT * FROM customers ORDER BY phone", "ORDER BY", "JSON plan"),
    ("SELECT * FROM customers; SELECT 1", "one statement", "one at a time"),
    ("SELECT JSON_TABLE FROM", "parsed", "unparsable text"),
    (
        "SELECT jt.x FROM customers c, JSON_TABLE(c.email, '$' COLUMNS (x TEXT PATH '$')) jt",
        "traced",
        "a table function",
    ),
]


@pytest.mark.parametrize(("sql", "words", "why"), REFUSED, ids=[row[2] for row in REFUSED])
def test_inference_and_untraceable_statements_are_refused(sql: str, words: str, why: str) -> None:
    plan = plan_masking(sql, FACTS, RULES)
    assert isinstance(plan, Refusal), why
    assert words.lower() in plan.reason.lower(), plan.reason


ALLOWED_WITHOUT_ROWS = [
    ("SHOW TABLES", "SHOW returns names"),
    ("SHOW CREATE TABLE customers", "a definition"),
    ("DESCRIBE customers", "columns, no rows"),
    ("EXPLAIN SELECT id FROM customers WHERE id = 3", "a plan without masked filters"),
    ("UPDATE customers SET name = 'x' WHERE id = 1", "a change naming no masked column"),
    ("DELETE FROM orders WHERE id = 1", "a change of another table"),
]


@pytest.mark.parametrize(
    ("sql", "why"), ALLOWED_WITHOUT_ROWS, ids=[row[1] for row in ALLOWED_WITHOUT_ROWS]
)
def test_statements_returning_no_table_rows_pass_unmasked(sql: str, why: str) -> None:
    assert plan_masking(sql, FACTS, RULES) == MaskPlan(), why


def test_nothing_is_judged_where_nothing_is_masked() -> None:
    masker = Masker(FACTS, MaskRules())
    facts = SchemaFacts("shop", {("shop", "orders"): TableFacts(("id", "note"))})
    assert not Masker(facts, MaskRules()).active
    # The comment marker alone still masks.
    assert masker.active and masker.plan("SELECT card FROM customers") != MaskPlan()
    assert Masker(facts, MaskRules()).plan("SELECT /*! 1 */ FROM orders WHERE note = 'x'") == (
        MaskPlan()
    )


def test_the_reasons_name_the_rule() -> None:
    plan = plan_masking("SELECT email, card, phone FROM customers", FACTS, RULES)
    assert isinstance(plan, MaskPlan)
    assert plan.reasons == {
        "customers.email": 'masked_columns "customers.EMAIL"',
        "customers.card": "[masked] in its comment",
        "customers.phone": 'masked_columns "*.phone"',
    }


def test_a_table_plan_masks_a_sample_of_a_table_or_view() -> None:
    masker = Masker(FACTS, RULES)
    table = masker.table_plan("Customers")
    assert isinstance(table, MaskPlan) and table.width == 6
    assert table.positions == {2, 3, 4}
    view = masker.table_plan("v_contacts")
    assert isinstance(view, MaskPlan) and view.positions == {1}
    assert isinstance(masker.table_plan("v_gmail"), Refusal)
    assert isinstance(masker.table_plan("nowhere"), Refusal)


def test_a_statement_naming_no_sensitive_table_needs_no_lineage() -> None:
    masker = Masker(FACTS, RULES)
    orders = (TableRef(None, "orders"),)
    assert masker.plan("SELECT * FROM orders WHERE note = 'x'", orders) == MaskPlan()
    # Still judged in full: an unknown table, a view, a table holding a masked column.
    assert isinstance(masker.plan("SELECT * FROM nowhere", (TableRef(None, "nowhere"),)), Refusal)
    plan = masker.plan("SELECT * FROM v_contacts", (TableRef(None, "v_contacts"),))
    assert isinstance(plan, MaskPlan) and plan.positions == {1}
    assert isinstance(masker.plan("SELECT id FROM orders WHERE note = '[masked]'", orders), Refusal)
    assert isinstance(masker.plan("SELECT /*! note */ FROM orders", orders), Refusal)


# Ordinary reads over a table holding a masked column: none is refused (false refusals: 0).
BENIGN = [
    "SELECT id FROM customers LIMIT 10 OFFSET 5",
    "SELECT id FROM customers LIMIT 5, 10",
    "SELECT name FROM customers WHERE id BETWEEN 1 AND 5",
    "SELECT IFNULL(name, 'x') FROM customers",
    "SELECT name FROM customers FORCE INDEX (PRIMARY)",
    "SELECT SQL_CALC_FOUND_ROWS name FROM customers",
    "SELECT c.name, o.total FROM customers c LEFT JOIN orders o ON o.customer_id = c.id",
    "SELECT COUNT(DISTINCT name) FROM customers",
    "SELECT name, email FROM customers ORDER BY name",
    "SELECT name FROM customers WHERE name REGEXP '^A'",
    "SELECT CONVERT(name USING utf8mb4) FROM customers",
    "SELECT name COLLATE utf8mb4_bin FROM customers",
    "SELECT JSON_VALUE(notes, '$.a') FROM customers",
    "SELECT GROUP_CONCAT(name ORDER BY id SEPARATOR ',') FROM customers",
    "SELECT id, email FROM customers WHERE id IN (1, 2, 3)",
    "SELECT c.*, o.* FROM customers c JOIN orders o ON o.customer_id = c.id",
    "SELECT name AS `Full Name` FROM customers",
    "SELECT HIGH_PRIORITY name FROM customers",
    "SELECT STRAIGHT_JOIN c.id FROM customers c JOIN orders o ON o.customer_id = c.id",
    "SELECT name FROM customers WHERE MATCH(notes) AGAINST ('x')",
    "SELECT id FROM customers c WHERE NOT EXISTS "
    "(SELECT 1 FROM orders o WHERE o.customer_id = c.id)",
    "SELECT name, COUNT(*) FROM customers GROUP BY name WITH ROLLUP",
    "SELECT name FROM customers c USE INDEX (PRIMARY) WHERE c.id > 2",
    "SELECT name FROM customers WHERE name LIKE 'a!%' ESCAPE '!'",
    "SELECT * FROM customers WHERE id = 1 LOCK IN SHARE MODE",
]


@pytest.mark.parametrize("sql", BENIGN)
def test_ordinary_reads_are_not_refused(sql: str) -> None:
    assert isinstance(plan_masking(sql, FACTS, RULES), MaskPlan)
