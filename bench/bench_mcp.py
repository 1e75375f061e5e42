"""MCP benchmark: a read through MCP against the same read through Slack, in one run.

    python bench/bench_mcp.py [--url mysql://root@127.0.0.1:3306/test] [--reads 30] [--runs 3]

One bot in this process (the real Bolt app over HTTP, the agent, MariaDB, embedded state)
with the fake Slack and the fake model server, answering:

- MCP: the SDK's client over Streamable HTTP at /mcp (one initialized session, as a coding
  agent keeps one) calls execute_query with a SELECT; timed from the call to its result.
- Slack: a signed mention whose model (answering at once) calls execute_query with the same
  SELECT, then answers; timed from the event to the end of the turn (the result table, the
  CSV and the answer posted to the fake Slack).

The two paths run the same tool through the same guard and data layer; the difference is
what each surrounds it with (an MCP request and its JSON answer; two model round trips, the
progress updates and the posts of a Slack turn). Each run takes the median of `--reads`
reads per path after warming up; the ratio is MCP / Slack. Prints the load average and
min / median / max over `--runs` runs.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.datasets import DEFAULT_URL, connect, schema_url
from tests.fakes.model_server import FakeModelServer, Turn, call, calls, say
from tests.fakes.slack_server import FakeSlack
from tests.mcp.support import http_session, json_of, with_mcp
from tests.slack.conftest import APPROVER, ASKER, BOT_TOKEN, STAGING, SlackHarness

SCHEMA = "dbagent_bench_mcp"
SQL = "SELECT id, customer, status, total FROM orders WHERE status = 'pending' ORDER BY id"
ROWS = 200
WARM_UP = 5


async def prepare(url: str) -> str:
    connection = await connect(url)
    try:
        async with connection.cursor() as cursor:
            await cursor.execute(f"CREATE DATABASE IF NOT EXISTS {SCHEMA}")
            await cursor.execute(
                f"CREATE TABLE IF NOT EXISTS {SCHEMA}.orders (id INT PRIMARY KEY, "
                "customer VARCHAR(100) NOT NULL, status VARCHAR(20) NOT NULL, "
                "total DECIMAL(10,2) NOT NULL)"
            )
            await cursor.execute(f"DELETE FROM {SCHEMA}.orders")
            values = ", ".join(
                f"({i}, 'customer {i}', '{'pending' if i % 4 == 0 else 'paid'}', {i}.50)"
                for i in range(1, ROWS + 1)
            )
            await cursor.execute(f"INSERT INTO {SCHEMA}.orders VALUES {values}")
    finally:
        connection.close()
    return schema_url(url, SCHEMA)


def read_turn(body: dict[str, object]) -> Turn:
    """The model of a Slack turn: the read first, then an answer once it has the rows."""
    messages = body.get("messages")
    if isinstance(messages, list) and messages and messages[-1].get("role") == "tool":
        return say("Here are the pending orders.")
    return calls(call("execute_query", {"database": STAGING, "sql": SQL}))


async def one_run(url: str, reads: int) -> tuple[float, float]:
    """(MCP median ms, Slack median ms) of one run."""
    with tempfile.TemporaryDirectory() as state_dir:
        async with (
            FakeSlack(users={ASKER: "UTC", APPROVER: "UTC"}, token=BOT_TOKEN) as slack,
            FakeModelServer(responder=read_turn, api_key="test-key") as model,
        ):
            bot = SlackHarness(slack, model, url, Path(state_dir))
            bot.settings = with_mcp(bot.settings, APPROVER)
            await bot.start()
            try:
                async with http_session(f"{bot.url}/mcp") as session:

                    async def mcp_read() -> float:
                        started = time.perf_counter()
                        rows = json_of(
                            await session.call_tool(
                                "execute_query", {"database": STAGING, "sql": SQL}
                            )
                        )
                        took = time.perf_counter() - started
                        assert rows["row_count"] == ROWS // 4, rows
                        return took

                    async def slack_read() -> float:
                        started = time.perf_counter()
                        await bot.mention("the pending orders, please")
                        await bot.settled()
                        return time.perf_counter() - started

                    for _ in range(WARM_UP):
                        await mcp_read()
                        await slack_read()
                    mcp_times, slack_times = [], []
                    for _ in range(reads):  # interleaved: both see the same machine
                        mcp_times.append(await mcp_read())
                        slack_times.append(await slack_read())
            finally:
                await bot.stop()
    return statistics.median(mcp_times) * 1000, statistics.median(slack_times) * 1000


def load_average() -> str:
    return Path("/proc/loadavg").read_text().strip()


def spread(values: list[float]) -> str:
    return f"{min(values):.2f} / {statistics.median(values):.2f} / {max(values):.2f}"


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=DEFAULT_URL)
    parser.add_argument("--reads", type=int, default=30)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    url = await prepare(args.url)
    print(f"load average: {load_average()}")
    mcp, slack, ratios = [], [], []
    try:
        for run in range(args.runs):
            mcp_ms, slack_ms = await one_run(url, args.reads)
            mcp.append(mcp_ms)
            slack.append(slack_ms)
            ratios.append(mcp_ms / slack_ms)
            print(
                f"run {run + 1}: MCP read {mcp_ms:.2f} ms, Slack read {slack_ms:.2f} ms "
                f"(median of {args.reads}), ratio {mcp_ms / slack_ms:.2f}"
            )
    finally:
        connection = await connect(args.url)
        try:
            async with connection.cursor() as cursor:
                await cursor.execute(f"DROP DATABASE IF EXISTS {SCHEMA}")
        finally:
            connection.close()
    print(f"load average: {load_average()}")
    print(f"MCP read, ms (min / median / max of {args.runs} runs):   {spread(mcp)}")
    print(f"Slack read, ms (min / median / max of {args.runs} runs): {spread(slack)}")
    print(f"ratio MCP / Slack (min / median / max):            {spread(ratios)}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("DBAGENT_LOG_LEVEL", "ERROR")
    sys.exit(asyncio.run(main()))
