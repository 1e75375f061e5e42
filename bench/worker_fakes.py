"""The fake Slack Web API and model server of bench_workers.py, in a child process of their own.

The bot runs as separate processes there, so what the benchmark needs to know of each thread
is read off the fake Slack: how many answers were posted in its channel (and result files
shared, with execute_query), when the last call into the channel came, and from which client
ports (which tell the worker that made them).
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import multiprocessing
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any, Self
from urllib.parse import urlsplit

from aiohttp import web

from bench.bench_slack import TOKEN, responder
from tests.fakes.model_server import FakeModelServer, Turn
from tests.fakes.slack_server import FakeSlack

ANSWER = "Answer to"  # how the benchmark's model begins every answer


@dataclass
class Seen:
    """What the fake Slack saw of one thread (its channel)."""

    answers: int = 0
    files: int = 0
    last_at: float = 0.0  # time.monotonic(), the same clock in every process
    ports: set[int] = field(default_factory=set)
    # Other posts not deleted yet (ts → text): the line saying what the bot is doing, which
    # goes when the turn ends, or a warning, which stays (and shows why a turn failed).
    others: dict[str, str] = field(default_factory=dict)
    done: bool = False


@dataclass
class Report:
    threads: dict[str, Seen]
    api_calls: int  # Web API calls since the previous report
    model_calls: list[list[float]]  # each question's model calls: when they reached the model


class CountingSlack(FakeSlack):
    def __init__(self, tool: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.needs_file = tool == "execute_query"  # its result is shared as a file
        self.seen: dict[str, Seen] = {}
        self.api_calls = 0
        self.noted = asyncio.Event()

    def build(self) -> web.Application:
        app = super().build()

        @web.middleware
        async def note(request: web.Request, handler: Any) -> web.StreamResponse:
            return await self._note(request, handler)

        app.middlewares.append(note)
        return app

    async def _note(self, request: web.Request, handler: Any) -> web.StreamResponse:
        response: web.StreamResponse = await handler(request)
        method = request.match_info.get("method")
        if method is None:  # the file's bytes: its completeUploadExternal follows
            return response
        self.api_calls += 1
        args = await _arguments_again(request)
        channel = args.get("channel") or args.get("channel_id")
        if not isinstance(channel, str):
            return response
        seen = self.seen.setdefault(channel, Seen())
        seen.last_at = time.monotonic()
        peer = request.transport.get_extra_info("peername") if request.transport else None
        if peer:
            seen.ports.add(int(peer[1]))
        body = response.body if isinstance(response, web.Response) else None
        answer: dict[str, Any] = json.loads(body) if isinstance(body, bytes) else {}
        ok = answer.get("ok") is True
        if ok and method == "chat.postMessage":
            if str(args.get("text")).startswith(ANSWER):
                seen.answers += 1
            else:
                seen.others[str(answer["ts"])] = str(args.get("text"))
        if ok and method == "chat.delete":
            seen.others.pop(str(args.get("ts")), None)
        if ok and method == "chat.stopStream":
            texts = [str(chunk.get("text")) for chunk in args.get("chunks") or ()]
            seen.answers += any(text.startswith(ANSWER) for text in texts)
        if ok and method == "files.completeUploadExternal":
            seen.files += len(args.get("files") or ())
        seen.done = seen.answers > 0 and (seen.files > 0 or not self.needs_file) and not seen.others
        self.noted.set()
        return response

    async def report(self, channels: list[str], within_s: float) -> Report:
        """Once every channel's thread is done (or `within_s` has passed): what was seen."""
        deadline = time.monotonic() + within_s
        while not all(self.seen.get(c, Seen()).done for c in channels):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            self.noted.clear()
            try:
                await asyncio.wait_for(self.noted.wait(), remaining)
            except TimeoutError:
                break
        calls, self.api_calls = self.api_calls, 0
        return Report({c: self.seen.get(c, Seen()) for c in channels}, calls, [])


async def _arguments_again(request: web.Request) -> dict[str, Any]:
    """A call's arguments once the fake has read them (aiohttp keeps the body it read)."""
    args: dict[str, Any] = dict(request.query)
    if request.content_type == "application/json":
        args.update(json.loads(await request.read() or b"{}"))
    elif request.content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
        args.update(await request.post())
    if isinstance(args.get("files"), str):
        args["files"] = json.loads(args["files"])
    return args


def serve(connection: Connection, tool: str, model_delay: float) -> None:
    """The child process: serves until the parent sends "stop"; answers each list of channels
    it is sent with their Report.

    The fakes keep every call they answer (the tests read them), so a full collection of
    this process walks more each round: 50-90 ms by the end of a run, during which neither
    fake answers, and which the bot would be charged for if it fell inside a round. The
    collector runs between rounds instead, once each round is over and before it is
    reported (the next round starts only then).
    """
    logging.basicConfig(level=logging.WARNING)
    gc.disable()

    respond = responder(tool)
    asked: dict[str, list[float]] = {}  # question → when each of its model calls arrived

    def noting(body: dict[str, Any]) -> Turn:
        question = next(m["content"] for m in body["messages"] if m.get("role") == "user")
        asked.setdefault(str(question), []).append(time.monotonic())
        return respond(body)

    async def run() -> None:
        # The tests check the bot's messages; here that work would only take the bot's CPU.
        slack = CountingSlack(
            tool, users={"U0BENCH": "Europe/Paris"}, token=TOKEN, checks_messages=False
        )
        async with slack, FakeModelServer(responder=noting, delay_s=model_delay) as model:
            connection.send((slack.api_url, model.url))
            loop = asyncio.get_running_loop()
            while (command := await loop.run_in_executor(None, connection.recv)) != "stop":
                channels, questions, within_s = command
                report = await slack.report(channels, within_s)
                report.model_calls = [asked.pop(question, []) for question in questions]
                gc.collect()
                connection.send(report)

    asyncio.run(run())


class Fakes:
    """`with Fakes(tool, model_delay) as fakes:` the child process, and its URLs."""

    def __init__(self, tool: str, model_delay: float) -> None:
        context = multiprocessing.get_context("spawn")
        self._parent, child = context.Pipe()
        self._process = context.Process(target=serve, args=(child, tool, model_delay), daemon=True)

    def __enter__(self) -> Self:
        self._process.start()
        self.slack_api_url, self.model_url = self._parent.recv()
        self.slack_port = int(urlsplit(self.slack_api_url).port or 0)
        assert self._process.pid is not None
        self.pid: int = self._process.pid
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._parent.send("stop")
        self._process.join(10)

    async def report(self, channels: list[str], questions: list[str], within_s: float) -> Report:
        """Once every channel's thread is done: what the fake Slack saw of each, and when the
        model was asked each question (the question's calls, in order)."""

        def ask() -> Report:
            self._parent.send((channels, questions, within_s))
            answer: Report = self._parent.recv()
            return answer

        return await asyncio.get_running_loop().run_in_executor(None, ask)
