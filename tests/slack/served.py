"""The bot as it is deployed: `python -m bot serve` in a process of its own (HTTP mode),
configured by environment and dbagent.toml, pointed at the test's fake Slack, fake model and
MariaDB — so a test can SIGKILL it mid-run, start another, or run two replicas on Redis.

Events are sent with a SlackHarness that is not started (`sender`): its signed requests go
to the served process instead."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

from tests.fakes.local import free_port
from tests.fakes.model_server import FakeModelServer
from tests.fakes.slack_server import FakeSlack
from tests.slack.conftest import APPROVER, BOT_TOKEN, SIGNING_SECRET, STAGING, SlackHarness

SERVING = "is serving Slack over HTTP"
START_S = 60.0

CONFIG = """
[[databases]]
name = "{name}"
url = "{url}"
environment = "staging"

[limits]
model_max_retries = 0

[approvals]
approvers = ["{approver}"]
"""


def bot_environment(
    directory: Path,
    slack: FakeSlack,
    model: FakeModelServer,
    shop_url: str,
    *,
    state_url: str | None = None,
) -> dict[str, str]:
    """A deployment's environment: its own port, state in `directory` (or `state_url`)."""
    config = directory / "dbagent.toml"
    config.write_text(CONFIG.format(name=STAGING, url=shop_url, approver=APPROVER))
    ours = ("DBAGENT_", "SLACK_", "OPENAI_")
    env = {key: value for key, value in os.environ.items() if not key.startswith(ours)}
    env.update(
        DBAGENT_CONFIG=str(config),
        DBAGENT_STATE_DIR=str(directory / "state"),
        SLACK_BOT_TOKEN=BOT_TOKEN,
        SLACK_SIGNING_SECRET=SIGNING_SECRET,
        SLACK_API_URL=slack.api_url,
        OPENAI_BASE_URL=model.url,
        OPENAI_API_KEY="test-key",
        OPENAI_MODEL="fake-model",
        PORT=str(free_port()),
    )
    if state_url is not None:
        env["DBAGENT_STATE_URL"] = state_url
        env["DBAGENT_STATE_KEY"] = os.environ["DBAGENT_STATE_KEY"]  # tests/conftest.py's
    return env


class ServedBot:
    """One `python -m bot serve` process; its log kept in `lines`."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.url = f"http://127.0.0.1:{env['PORT']}"
        self.lines: list[str] = []
        self._serving = asyncio.Event()
        self._process: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None

    async def start(self) -> ServedBot:
        self._process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", "serve", env=self.env, stderr=asyncio.subprocess.PIPE
        )
        self._reader = asyncio.create_task(self._read())
        try:
            await asyncio.wait_for(self._serving.wait(), START_S)
        except TimeoutError:
            self.kill()
            raise RuntimeError("the bot did not start:\n" + "\n".join(self.lines[-30:])) from None
        return self

    async def _read(self) -> None:
        assert self._process is not None and self._process.stderr is not None
        async for raw in self._process.stderr:
            line = raw.decode(errors="replace").rstrip()
            self.lines.append(line)
            if SERVING in line:
                self._serving.set()

    def kill(self) -> None:
        """SIGKILL: nothing of ours runs after it."""
        if self._process is not None and self._process.returncode is None:
            self._process.send_signal(signal.SIGKILL)

    async def stop(self) -> None:
        if self._process is None:
            return
        if self._process.returncode is None:
            self._process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self._process.wait(), 30)
            except TimeoutError:
                self.kill()
        await self._process.wait()
        if self._reader is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._reader, 5)

    def sender(self, harness: SlackHarness) -> SlackHarness:
        """`harness`, sending its events to this process."""
        harness.url = self.url
        return harness


@contextlib.asynccontextmanager
async def private_redis(directory: Path) -> AsyncIterator[str]:
    """A redis-server of this test's own on a free port (never the shared one): its URL."""
    port = free_port()
    process = await asyncio.create_subprocess_exec(
        "redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
        "--appendonly", "no", "--dir", str(directory),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        async for raw in process.stdout:
            if b"Ready to accept connections" in raw:
                break
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        await process.wait()
