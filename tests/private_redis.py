"""A redis-server of the test's own, on a free port, that a test may stop and start again
(the shared Redis is never touched). With `appendonly`, what was stored survives a restart,
as on a production Redis with AOF."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import redis.asyncio as redis

from tests.waiting import until


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


class PrivateRedis:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        self._process = await asyncio.create_subprocess_exec(
            *[
                "redis-server",
                "--port", str(self.port),
                "--bind", "127.0.0.1",
                "--dir", str(self.directory),
                "--save", "",
                "--appendonly", "yes",
                "--appendfsync", "always",
            ],
            stdout=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        await until(self.answers)

    async def answers(self) -> bool:
        client = redis.Redis.from_url(self.url, socket_connect_timeout=0.5)
        try:
            return bool(await client.ping())
        except (redis.ConnectionError, OSError):
            return False
        finally:
            await client.aclose()

    async def stop(self) -> None:
        """SIGTERM, and wait until it has exited (its port refuses connections)."""
        process, self._process = self._process, None
        if process is not None and process.returncode is None:
            process.terminate()
            await asyncio.wait_for(process.wait(), 10)
