"""The series moved by faults and by holding: a statement killed at its timeout (real MariaDB),
a state store that cannot be reached (a refused connection), a session lease held."""

from __future__ import annotations

import pytest
from prometheus_client import REGISTRY

from bot.config import DatabaseConfig, Limits
from bot.db import Database, DbError
from bot.state import StateError
from bot.state.leases import LocalLeases
from bot.state.redis_db import RedisDb
from tests.fakes.local import free_port


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def test_a_statement_killed_at_its_timeout_is_counted(mysql_url: str) -> None:
    database = Database(DatabaseConfig(name="t", url=mysql_url, environment="staging"), Limits())
    before = sample("dbagent_statement_kills_total", result="killed")
    try:
        with pytest.raises(DbError, match="timed out"):
            await database.execute(
                ["SELECT SLEEP(30) AS killed_for_metrics"], read_only=True, limit=1, timeout_s=0.5
            )
    finally:
        await database.close()
    assert sample("dbagent_statement_kills_total", result="killed") == before + 1


async def test_a_state_store_out_of_reach_is_counted() -> None:
    before = sample("dbagent_state_errors_total", store="redis")
    with pytest.raises(StateError):
        await RedisDb.open(f"redis://127.0.0.1:{free_port()}/0")  # nothing listens there
    assert sample("dbagent_state_errors_total", store="redis") >= before + 1


async def test_a_held_lease_is_a_gauge_while_it_is_held() -> None:
    leases = LocalLeases()
    before = sample("dbagent_leases_held")
    async with leases.hold("T:C:1.1"):
        assert sample("dbagent_leases_held") == before + 1
        async with leases.hold("T:C:2.2"):
            assert sample("dbagent_leases_held") == before + 2
    assert sample("dbagent_leases_held") == before
