"""Test and benchmark data: a small shop schema and a large table, deterministic.

    python bench/datasets.py shop dbagent_shop          # customers, orders, order_items, products
    python bench/datasets.py large dbagent_bench        # events: 1,000,000 rows (kept if present)

`--url` (or DBAGENT_TEST_MYSQL_URL) names the server; the default is the test MariaDB.
Importable by tests: `from bench.datasets import create_shop`.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import logging
import os
import random
import sys
import time
from decimal import Decimal
from pathlib import Path

import asyncmy

if __package__ in (None, ""):  # run as a script: make `bot` importable from the checkout
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.config import ConnectionTarget
from bot.db.names import quote_identifier

DEFAULT_URL = os.environ.get("DBAGENT_TEST_MYSQL_URL", "mysql://root@127.0.0.1:3306/test")
SHOP_TABLES = ("customers", "products", "orders", "order_items")
SHOP_VIEWS = ("customer_order_counts",)
CUSTOMERS = 1_000
PRODUCTS = 200
ORDERS = 3_000
LARGE_ROWS = 1_000_000
_EPOCH = datetime.datetime(2024, 1, 1)
# asyncmy logs server notes such as "database doesn't exist" for DROP … IF EXISTS.
logging.getLogger("asyncmy").setLevel(logging.ERROR)

_SHOP_DDL = (
    """CREATE TABLE customers (
        id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
        email VARCHAR(120) NOT NULL,
        name VARCHAR(100) NOT NULL,
        country CHAR(2) NOT NULL COMMENT 'ISO 3166-1 alpha-2',
        created_at DATETIME NOT NULL,
        UNIQUE KEY uq_customers_email (email),
        KEY ix_customers_country (country)
    ) ENGINE=InnoDB COMMENT='People who can place orders'""",
    """CREATE TABLE products (
        id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
        sku VARCHAR(20) NOT NULL,
        name VARCHAR(100) NOT NULL,
        category VARCHAR(40) NOT NULL,
        price DECIMAL(10,2) NOT NULL,
        UNIQUE KEY uq_products_sku (sku)
    ) ENGINE=InnoDB COMMENT='The catalogue'""",
    """CREATE TABLE orders (
        id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
        customer_id INT UNSIGNED NOT NULL,
        status ENUM('pending','paid','shipped','cancelled') NOT NULL DEFAULT 'pending',
        total DECIMAL(12,2) NOT NULL,
        created_at DATETIME NOT NULL,
        KEY ix_orders_customer (customer_id),
        KEY ix_orders_created (created_at),
        CONSTRAINT fk_orders_customer FOREIGN KEY (customer_id) REFERENCES customers (id)
    ) ENGINE=InnoDB COMMENT='One row per checkout'""",
    """CREATE TABLE order_items (
        id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
        order_id INT UNSIGNED NOT NULL,
        product_id INT UNSIGNED NOT NULL,
        quantity SMALLINT UNSIGNED NOT NULL,
        unit_price DECIMAL(10,2) NOT NULL COMMENT 'price when ordered',
        KEY ix_items_order (order_id),
        KEY ix_items_product (product_id),
        CONSTRAINT fk_items_order FOREIGN KEY (order_id) REFERENCES orders (id),
        CONSTRAINT fk_items_product FOREIGN KEY (product_id) REFERENCES products (id)
    ) ENGINE=InnoDB""",
    """CREATE VIEW customer_order_counts AS
        SELECT c.id AS customer_id, c.email, COUNT(o.id) AS orders
        FROM customers c LEFT JOIN orders o ON o.customer_id = c.id
        GROUP BY c.id, c.email""",
)
_COUNTRIES = ("DE", "FR", "GB", "US", "NL", "SE", "ES", "IT", "PL", "CA")
_CATEGORIES = ("books", "games", "garden", "kitchen", "music", "tools")
_FIRST = ("Ada", "Alan", "Grace", "Edsger", "Barbara", "Donald", "Frances", "Ken", "Niklaus")
_LAST = ("Lovelace", "Turing", "Hopper", "Dijkstra", "Liskov", "Knuth", "Allen", "Thompson")


def schema_url(url: str, schema: str) -> str:
    """The same server and user as `url`, with `schema` as the default database."""
    target = ConnectionTarget.parse(url)
    password = target.password.get_secret_value()
    login = f"{target.user}:{password}" if password else target.user
    return f"mysql://{login}@{target.host}:{target.port}/{schema}"


async def connect(url: str, schema: str | None = None) -> asyncmy.Connection:
    """A plain asyncmy connection to `schema`, or to the URL's own database."""
    target = ConnectionTarget.parse(url)
    return await asyncmy.connect(
        host=target.host,
        port=target.port,
        user=target.user,
        password=target.password.get_secret_value(),
        database=schema or target.schema_name,
        autocommit=True,
        connect_timeout=5,
    )


async def recreate_schema(url: str, schema: str) -> None:
    connection = await connect(url)
    try:
        async with connection.cursor() as cursor:
            await cursor.execute(f"DROP DATABASE IF EXISTS {quote_identifier(schema)}")
            await cursor.execute(
                f"CREATE DATABASE {quote_identifier(schema)} CHARACTER SET utf8mb4"
            )
    finally:
        connection.close()


async def create_shop(url: str, schema: str) -> dict[str, int]:
    """(Re)create the shop schema in `schema` with the same rows every time; return row counts."""
    await recreate_schema(url, schema)
    rng = random.Random(20240101)
    customers = []
    for n in range(1, CUSTOMERS + 1):
        first, last = rng.choice(_FIRST), rng.choice(_LAST)
        customers.append(
            (
                f"{first.lower()}.{last.lower()}{n}@example.com",
                f"{first} {last}",
                rng.choice(_COUNTRIES),
                _EPOCH + datetime.timedelta(minutes=rng.randrange(0, 200_000)),
            )
        )
    products = [
        (
            f"SKU-{n:05d}",
            f"{rng.choice(_CATEGORIES).title()} item {n}",
            rng.choice(_CATEGORIES),
            Decimal(rng.randrange(199, 19_999)) / 100,
        )
        for n in range(1, PRODUCTS + 1)
    ]
    orders: list[tuple[int, str, Decimal, datetime.datetime]] = []
    items: list[tuple[int, int, int, Decimal]] = []
    for order_id in range(1, ORDERS + 1):
        total = Decimal("0.00")
        for _ in range(rng.randint(1, 4)):
            product_id = rng.randint(1, PRODUCTS)
            quantity = rng.randint(1, 3)
            price = products[product_id - 1][3]
            items.append((order_id, product_id, quantity, price))
            total += price * quantity
        status = rng.choice(("pending", "paid", "paid", "shipped", "shipped", "cancelled"))
        created = _EPOCH + datetime.timedelta(minutes=rng.randrange(0, 250_000))
        orders.append((rng.randint(1, CUSTOMERS), status, total, created))

    connection = await connect(url, schema)
    try:
        async with connection.cursor() as cursor:
            for ddl in _SHOP_DDL:
                await cursor.execute(ddl)
            await cursor.executemany(
                "INSERT INTO customers (email, name, country, created_at) VALUES (%s,%s,%s,%s)",
                customers,
            )
            await cursor.executemany(
                "INSERT INTO products (sku, name, category, price) VALUES (%s,%s,%s,%s)",
                products,
            )
            await cursor.executemany(
                "INSERT INTO orders (customer_id, status, total, created_at) VALUES (%s,%s,%s,%s)",
                orders,
            )
            await cursor.executemany(
                "INSERT INTO order_items (order_id, product_id, quantity, unit_price)"
                " VALUES (%s,%s,%s,%s)",
                items,
            )
    finally:
        connection.close()
    return {
        "customers": len(customers),
        "products": len(products),
        "orders": len(orders),
        "order_items": len(items),
    }


async def create_large_table(
    url: str, schema: str, table: str = "events", rows: int = LARGE_ROWS
) -> bool:
    """Make `schema.table` hold `rows` rows (ids 1..rows); kept when already there.

    Returns True when it had to be built. Rows come from a cross join of digit tables inside
    the server (INSERT … SELECT), so a million rows take seconds, not a million round trips.
    """
    name = f"{quote_identifier(schema)}.{quote_identifier(table)}"
    connection = await connect(url)
    try:
        async with connection.cursor() as cursor:
            await cursor.execute(f"CREATE DATABASE IF NOT EXISTS {quote_identifier(schema)}")
            await cursor.execute(
                "SELECT COUNT(*) FROM information_schema.TABLES"
                " WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
                (schema, table),
            )
            (exists,) = await cursor.fetchone()
            if exists:
                await cursor.execute(f"SELECT COUNT(*), MAX(id) FROM {name}")
                count, highest = await cursor.fetchone()
                if count == rows and highest == rows:
                    return False
                await cursor.execute(f"DROP TABLE {name}")
            await cursor.execute(
                f"""CREATE TABLE {name} (
                    id INT UNSIGNED NOT NULL PRIMARY KEY,
                    customer_id INT UNSIGNED NOT NULL,
                    amount DECIMAL(10,2) NOT NULL,
                    note VARCHAR(40) NOT NULL,
                    created_at DATETIME NOT NULL
                ) ENGINE=InnoDB COMMENT='benchmark rows'"""
            )
            digits = (
                "(SELECT 0 d UNION ALL "
                + " UNION ALL ".join(f"SELECT {d}" for d in range(1, 10))
                + ")"
            )
            places = max(1, len(str(rows - 1)))
            number = " + ".join(f"p{i}.d * {10**i}" for i in range(places))
            sources = " CROSS JOIN ".join(f"{digits} p{i}" for i in range(places))
            await cursor.execute(
                f"INSERT INTO {name} (id, customer_id, amount, note, created_at)"
                f" SELECT n + 1, n % 5000 + 1, (n % 100000) / 100, CONCAT('event ', n + 1),"
                f" TIMESTAMP('2024-01-01') + INTERVAL n SECOND"
                f" FROM (SELECT {number} AS n FROM {sources}) numbers WHERE n < {int(rows)}"
            )
        return True
    finally:
        connection.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=("shop", "large"))
    parser.add_argument("schema")
    parser.add_argument("--url", default=DEFAULT_URL)
    parser.add_argument("--rows", type=int, default=LARGE_ROWS, help="rows of the large table")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    if args.what == "shop":
        counts = asyncio.run(create_shop(args.url, args.schema))
        summary = ", ".join(f"{table} {count}" for table, count in counts.items())
        print(f"shop schema {args.schema}: {summary}")
    else:
        built = asyncio.run(create_large_table(args.url, args.schema, rows=args.rows))
        state = "built" if built else "already there"
        print(f"{args.schema}.events: {args.rows} rows, {state}")
    print(f"took {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
