"""The floor of bench_workers.py: a minimal Bolt app making the same Slack and model calls as
the bot's turn, served the same way (HTTP on PORT, signed events), in one process.

    python -m bench.floor_bot     (environment: what bench/worker_bot.bot_environment sets)

On each mention: the same two model requests the bot sends (its system prompt and tools,
streamed, read with the openai client's own chat.completions API), the tool's query run on
MariaDB (a pool of asyncmy connections), its rows shared as a CSV file in the thread
(files_upload_v2) and the model's answer posted there (chat.postMessage). No state store, no
guard, no classifier, no history: what any Slack app making these calls pays. The person's
profile is looked up once (users.info) and their system prompt built once; the Slack calls
share one HTTP session, as the bot's do.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import logging
import os
import re
import signal
import sys
import tomllib
from typing import Any

import aiohttp
import asyncmy
import openai
from aiohttp import web
from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bot.agent import tools
from bot.agent.outcomes import Requester
from bot.agent.prompt import build_system_prompt
from bot.agent.skills import Skills
from bot.config import ConnectionTarget, DatabaseConfig, Mode
from bot.slack.server import EVENTS_PATH

SERVING = "is serving Slack over HTTP"  # what bench/worker_bot.py waits for
_MENTION = re.compile(r"<@[A-Z0-9]+>\s*")


def _database() -> DatabaseConfig:
    with open(os.environ["DBAGENT_CONFIG"], "rb") as config:
        (database,) = tomllib.load(config)["databases"]
    return DatabaseConfig(name=database["name"], url=database["url"], environment="staging")


async def _serve() -> None:
    database = _database()
    target = ConnectionTarget.parse(database.url.get_secret_value())
    pool = await asyncmy.create_pool(
        host=target.host,
        port=target.port,
        user=target.user,
        password=target.password.get_secret_value(),
        db=target.schema_name,
        maxsize=10,
        autocommit=True,
    )
    model = openai.AsyncOpenAI(
        base_url=os.environ["OPENAI_BASE_URL"],
        api_key=os.environ["OPENAI_API_KEY"],
        max_retries=0,
        http_client=openai.DefaultAioHttpClient(),
    )
    name = os.environ["OPENAI_MODEL"]
    specs = tools.specs_for(Mode.AGENT)
    skills = Skills.load()
    # One HTTP session for every Slack call (slack_sdk opens one per call otherwise).
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
    client = AsyncWebClient(
        token=os.environ["SLACK_BOT_TOKEN"], base_url=os.environ["SLACK_API_URL"], session=session
    )
    app = AsyncApp(
        token=os.environ["SLACK_BOT_TOKEN"],
        signing_secret=os.environ["SLACK_SIGNING_SECRET"],
        client=client,
    )
    prompts: dict[str, str] = {}  # the system prompt of each person, built once

    async def ask(messages: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
        stream = await model.chat.completions.create(
            model=name,
            messages=messages,  # type: ignore[arg-type]
            tools=specs,  # type: ignore[arg-type]
            stream=True,
            stream_options={"include_usage": True},
        )
        text, calls = "", {}
        async for chunk in stream:
            for choice in chunk.choices:
                text += choice.delta.content or ""
                for call in choice.delta.tool_calls or ():
                    seen = calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
                    seen["id"] = call.id or seen["id"]
                    if call.function is not None:
                        seen["name"] += call.function.name or ""
                        seen["arguments"] += call.function.arguments or ""
        return text, [calls[index] for index in sorted(calls)]

    async def run_query(sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
        async with pool.acquire() as connection, connection.cursor() as cursor:
            await cursor.execute(sql)
            rows = await cursor.fetchmany(50)
            return [column[0] for column in cursor.description], list(rows)

    @app.event("app_mention")
    async def mention(event: dict[str, Any], client: AsyncWebClient) -> None:
        channel, thread = event["channel"], event.get("thread_ts") or event["ts"]
        user = event["user"]
        # The bot acknowledges a question at once with a reaction: the floor does too.
        await client.reactions_add(channel=channel, timestamp=event["ts"], name="eyes")
        if user not in prompts:
            profile = await client.users_info(user=user)
            person = Requester(user, timezone=profile["user"].get("tz") or "UTC")
            prompts[user] = build_system_prompt(
                databases=[database], mode=Mode.AGENT, requester=person, skills=skills
            )
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": prompts[user]},
            {"role": "user", "content": _MENTION.sub("", event["text"]).strip()},
        ]
        text, calls = await ask(messages)
        while calls:
            messages.append(
                {
                    "role": "assistant",
                    "content": text or None,
                    "tool_calls": [
                        {
                            "id": call["id"],
                            "type": "function",
                            "function": {"name": call["name"], "arguments": call["arguments"]},
                        }
                        for call in calls
                    ],
                }
            )
            for call in calls:
                arguments = json.loads(call["arguments"])
                columns, rows = await run_query(arguments["sql"])
                table = io.StringIO()
                csv.writer(table).writerows([columns, *rows])
                await client.files_upload_v2(
                    channel=channel,
                    thread_ts=thread,
                    content=table.getvalue(),
                    filename="result.csv",
                    title="Result",
                )
                result = {"columns": columns, "rows": [[str(v) for v in row] for row in rows]}
                messages.append(
                    {"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)}
                )
            text, calls = await ask(messages)
        await client.chat_postMessage(channel=channel, thread_ts=thread, text=text)

    runner = web.AppRunner(app.web_app(path=EVENTS_PATH))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", int(os.environ["PORT"]), reuse_port=True)
    await site.start()
    print(f"floor app (pid {os.getpid()}) {SERVING}", file=sys.stderr, flush=True)
    stopped = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopped.set)
    await stopped.wait()
    await runner.cleanup()
    await model.close()
    await session.close()
    pool.close()
    await pool.wait_closed()


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(_serve())
