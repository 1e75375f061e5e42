"""Shared pieces of the classifier tests that ask a real MariaDB."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncmy

from bench.datasets import connect


@asynccontextmanager
async def scratch_cursor(mysql_url: str, *schemas: str) -> AsyncIterator[asyncmy.cursors.Cursor]:
    """A cursor in the first of `schemas`, all created empty and dropped afterwards; a
    statement may run for 5 s at most."""
    admin = await connect(mysql_url)
    try:
        async with admin.cursor() as setup:
            for schema in schemas:
                await setup.execute(f"DROP DATABASE IF EXISTS {schema}")
                await setup.execute(f"CREATE DATABASE {schema}")
        connection = await connect(mysql_url, schemas[0])
        try:
            async with connection.cursor() as cur:
                await cur.execute("SET SESSION max_statement_time = 5")
                yield cur
        finally:
            connection.close()
    finally:
        async with admin.cursor() as teardown:
            for schema in schemas:
                await teardown.execute(f"DROP DATABASE IF EXISTS {schema}")
        admin.close()
