"""A local fake of the Slack Web API (aiohttp) that records every call.

Point a real `slack_sdk` AsyncWebClient at `server.api_url` (its `base_url`). It answers
what dbagent uses — auth.test, chat.postMessage/update/delete/postEphemeral/getPermalink,
files.getUploadURLExternal + the upload URL (served here too) + files.completeUploadExternal,
usergroups.users.list, users.info (with tz), assistant.threads.setStatus, reactions.add/remove,
conversations.info, views.open/update (each trigger id works once, as in Slack), and Socket
Mode (apps.connections.open + a websocket; `push` sends an envelope) — keeps the messages,
files and views it was sent.

Faults on command: `rate_limit_next` (HTTP 429 with Retry-After), `fail_next` (`ok: false`
with an error), `http_error_next` (HTTP 500, 503…), `hang_next` (no answer for a while),
`refuse_channel` (every call into a channel fails, e.g. `not_in_channel`),
`limit_posts_per_channel` (429 for posts faster than Slack's per-channel rate), and
`enforce_limits` (Slack's documented limits: posts per channel, per-method tiers, appends
per stream; 429 + Retry-After beyond, and every call made before a Retry-After ran out is
kept in `ignored_retry_after`).

    async with FakeSlack(users={"U1": "Europe/Paris"}, usergroups={"S1": ["U2"]}) as slack:
        client = AsyncWebClient(token="xoxb-test", base_url=slack.api_url)
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import WSMsgType, web
from slack_sdk.errors import SlackObjectFormationError
from slack_sdk.models.blocks import Block
from slack_sdk.models.views import View

from tests.fakes.local import LocalServer
from tests.slack.block_limits import check_blocks

JsonObject = dict[str, Any]

BOT_USER_ID = "UBOT"
BOT_ID = "BBOT"
TEAM_ID = "T0TEAM"


@dataclass
class Call:
    method: str
    args: JsonObject
    token: str | None
    at: float = field(default_factory=time.monotonic)
    rate_limited: bool = False  # answered 429 (the client retries it as a new call)
    failed: bool = False  # answered with an HTTP error, or hung: nothing was done


@dataclass
class Message:
    channel: str
    ts: str
    text: str
    blocks: list[JsonObject]
    thread_ts: str | None
    user: str = BOT_USER_ID
    ephemeral_to: str | None = None
    deleted: bool = False
    edits: int = 0
    files: list[str] = field(default_factory=list)  # file ids shared with the message


@dataclass
class OpenedView:
    id: str
    trigger_id: str
    view: JsonObject  # as the app sent it (updates replace it)
    hash: str = ""


@dataclass
class UploadedFile:
    id: str
    filename: str
    length: int
    content: bytes = b""
    title: str | None = None
    channel: str | None = None
    thread_ts: str | None = None
    initial_comment: str | None = None
    snippet_type: str | None = None

    @property
    def text(self) -> str:
        return self.content.decode("utf-8")


# Slack's rate tiers (calls per minute per workspace and method) and the tier of each
# method dbagent calls. chat.postMessage has its own rule: about one per second per
# channel, with short bursts.
TIER_PER_MINUTE = {1: 1, 2: 20, 3: 50, 4: 100}
METHOD_TIERS = {
    "auth.test": 4,
    "chat.update": 3,
    "chat.delete": 3,
    "chat.postEphemeral": 4,
    "chat.getPermalink": 4,
    "chat.startStream": 2,
    "chat.appendStream": 4,
    "chat.stopStream": 2,
    "assistant.threads.setStatus": 3,
    "assistant.threads.setSuggestedPrompts": 3,
    "reactions.add": 3,
    "reactions.remove": 2,
    "files.getUploadURLExternal": 4,
    "files.completeUploadExternal": 4,
    "users.info": 4,
    "usergroups.users.list": 2,
    "conversations.info": 3,
    "views.open": 4,
    "views.update": 4,
    "views.publish": 4,
}


@dataclass
class SlackLimits:
    """Slack's limits as the fake enforces them. `speed` scales every rate (10: ten times
    Slack's, so a test of a minute's traffic takes seconds); `retry_after_s`, when set, is
    the Retry-After of every 429 (else the seconds until the call would be accepted,
    rounded up as Slack does at speed 1, to the millisecond otherwise)."""

    speed: float = 1.0
    posts_per_second: float = 1.0  # chat.postMessage, per channel
    post_burst: int = 4
    tier_burst_s: float = 60.0  # a tier takes this many seconds' worth of calls at once
    appends_per_second: float = 1.0  # chat.appendStream, per stream
    append_burst: int = 3
    retry_after_s: float | None = None


IN_FLIGHT_S = 0.05  # calls sent before the app could read a 429 arrive within this


def _slow_down_key(method: str, args: JsonObject) -> str:
    """What a 429 on this call is about: a channel's posts, or the method's tier."""
    if method == "chat.postMessage":
        return f"channel:{args.get('channel')}"
    return f"method:{method}"


def _identity(method: str, args: JsonObject) -> str:
    return method + json.dumps(args, sort_keys=True, default=str)


class _Bucket:
    """A token bucket: `burst` calls at once, then `rate` per second."""

    def __init__(self, rate: float, burst: float) -> None:
        self.rate, self.burst = rate, max(1.0, burst)
        self.tokens, self.at = self.burst, time.monotonic()

    def take(self) -> float:
        """0 when a call may go now (and it is counted); else the seconds to wait."""
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return 0.0
        return (1.0 - self.tokens) / self.rate


MAX_BLOCKS = 50  # per message (a modal or Home view holds 100)
MAX_TEXT = 40_000  # characters of a message's text


def _without_empty(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _without_empty(v) for k, v in node.items() if v not in ([], {}, None)}
    if isinstance(node, list):
        return [_without_empty(item) for item in node]
    return node


def block_kit_problem(blocks: Any, *, max_blocks: int = MAX_BLOCKS) -> str | None:
    """Why Slack would refuse these blocks, by slack_sdk's models and Slack's documented
    limits; None when they are fine. A block must survive slack_sdk's parse and re-render
    unchanged, so a misspelt key (which the models drop) counts as a problem too."""
    if not isinstance(blocks, list) or not all(isinstance(b, dict) for b in blocks):
        return "blocks is not a list of objects"
    try:
        # Limits slack_sdk does not check (tables, charts per message), and the chart
        # block it has no model for.
        check_blocks(blocks, limit=max_blocks)
    except (AssertionError, KeyError, TypeError, SlackObjectFormationError) as exc:
        return f"beyond Slack's limits: {exc or type(exc).__name__}"
    for index, block in enumerate(blocks):
        if block.get("type") == "data_visualization":
            continue  # checked above by its documented limits
        try:
            parsed = Block.parse(block)
            if parsed is None:
                return f"block {index}: unknown type {block.get('type')!r}"
            rendered = parsed.to_dict()
        except (SlackObjectFormationError, TypeError, AttributeError, ValueError) as exc:
            return f"block {index} ({block.get('type')}): {exc}"
        if _without_empty(rendered) != _without_empty(block):
            return f"block {index} ({block.get('type')}) does not round-trip: {block}"
    return None


def view_problem(view: Any) -> str | None:
    if not isinstance(view, dict):
        return "view is not an object"
    problem = block_kit_problem(view.get("blocks") or [], max_blocks=100)
    if problem:
        return problem
    try:
        View(**view).to_dict()
    except (SlackObjectFormationError, TypeError, ValueError) as exc:
        return f"view: {exc}"
    return None


def message_problem(method: str, args: JsonObject) -> str | None:
    """Why Slack would refuse the message this call carries (None: fine, or no message)."""
    if method in ("views.open", "views.update", "views.publish", "views.push"):
        return view_problem(args.get("view"))
    if method not in (
        "chat.postMessage",
        "chat.update",
        "chat.postEphemeral",
        "files.completeUploadExternal",
    ):
        return None
    text = args.get("text")
    if isinstance(text, str) and len(text) > MAX_TEXT:
        return f"text of {len(text):,} characters"
    if "blocks" in args and args["blocks"] not in (None, "", []):
        return block_kit_problem(args["blocks"])
    return None


class FakeSlack(LocalServer):
    def __init__(
        self,
        *,
        users: dict[str, str] | None = None,
        usergroups: dict[str, list[str]] | None = None,
        token: str | None = None,
        set_status_error: str | None = None,
        latency_s: float = 0.0,
        checks_messages: bool = True,
        private_channels: frozenset[str] = frozenset(),
    ) -> None:
        # user ID → IANA time zone; unknown users get "user_not_found".
        self.users = dict(users or {})
        self.usergroups = {key: list(value) for key, value in (usergroups or {}).items()}
        self.token = token  # when set, calls with another bearer token get invalid_auth
        # e.g. "not_allowed_token_type": how Slack answers outside an assistant thread.
        self.set_status_error = set_status_error
        self.latency_s = latency_s  # every API call waits this long (benchmarks)
        # Refuse messages and views Slack would refuse (invalid_blocks, msg_too_long). The
        # check parses every block with slack_sdk's models: benchmarks sharing the machine
        # with the bot turn it off, as the CPU it takes would be Slack's, not the bot's.
        self.checks_messages = checks_messages
        # Channels whose conversations.info says is_private (G… and D… always are).
        self.private_channels = private_channels
        self.channels_without_bot: set[str] = set()  # conversations.info: is_member false
        self.calls: list[Call] = []
        self.messages: list[Message] = []
        self.files: dict[str, UploadedFile] = {}
        self.views: list[OpenedView] = []
        self._used_triggers: set[str] = set()
        self._view_ids = itertools.count(1)
        self.rate_limited: list[str] = []  # methods answered with 429
        # (method, why) of every message or view Slack would have refused, as invalid_blocks
        self.invalid: list[tuple[str, str]] = []
        self._rate_limits: dict[str, deque[float]] = {}
        self._failures: dict[str, deque[str]] = {}
        self._http_errors: dict[str, deque[int]] = {}
        self._hangs: dict[str, deque[float]] = {}
        self.refused_channels: dict[str, str] = {}  # channel → error for every call into it
        self._post_limit: tuple[float, int] | None = None  # (per second, burst) per channel
        self._post_buckets: dict[str, tuple[float, float]] = {}
        self.limits: SlackLimits | None = None
        self._buckets: dict[str, _Bucket] = {}  # "channel:C…", "method:…", "stream:…"
        self._retry_until: dict[str, float] = {}  # bucket key → end of its last Retry-After
        self.ignored_retry_after: list[Call] = []  # made before their Retry-After ran out
        self._issued: dict[str, float] = {}  # bucket key → when its last 429 was answered
        self._retry_of: dict[str, float] = {}  # a call's identity → end of its Retry-After
        self._ts = itertools.count(1)
        self._file_ids = itertools.count(1)
        self._changed = asyncio.Event()
        self._stopping = asyncio.Event()  # hung calls give up when the server stops
        # Socket Mode: connected clients, and the envelope ids they acknowledged.
        self.sockets: list[web.WebSocketResponse] = []
        self.socket_acks: list[JsonObject] = []
        self._envelopes = itertools.count(1)

    # -- scripting ----------------------------------------------------------------------
    def rate_limit_next(self, method: str, retry_after_s: float = 1) -> None:
        """The next call of `method` gets HTTP 429 with Retry-After."""
        self._rate_limits.setdefault(method, deque()).append(retry_after_s)

    def fail_next(self, method: str, error: str, times: int = 1) -> None:
        """The next `times` calls of `method` answer {"ok": false, "error": error}."""
        self._failures.setdefault(method, deque()).extend([error] * times)

    def http_error_next(self, method: str, status: int = 500, times: int = 1) -> None:
        """The next `times` calls of `method` get HTTP `status` (500, 502, 503…) and do
        nothing."""
        self._http_errors.setdefault(method, deque()).extend([status] * times)

    def hang_next(self, method: str, seconds: float = 3600.0, times: int = 1) -> None:
        """The next `times` calls of `method` get no answer for `seconds` (then HTTP 504),
        and do nothing."""
        self._hangs.setdefault(method, deque()).extend([seconds] * times)

    def refuse_channel(self, channel: str, error: str = "not_in_channel") -> None:
        """Every call naming `channel` answers {"ok": false, "error": error} from now on."""
        self.refused_channels[channel] = error

    def limit_posts_per_channel(self, per_second: float = 1.0, burst: int = 4) -> None:
        """chat.postMessage into one channel faster than this gets 429, Retry-After 1 —
        Slack's own rule for posting, at a rate a test can choose."""
        self._post_limit = (per_second, burst)

    def enforce_limits(self, limits: SlackLimits | None = None) -> SlackLimits:
        """From now on, calls beyond Slack's documented limits get HTTP 429 + Retry-After:
        chat.postMessage per channel, every other method by its tier (per workspace), and
        chat.appendStream per stream too."""
        self.limits = limits or SlackLimits()
        return self.limits

    def _limit_keys(self, method: str, args: JsonObject) -> list[tuple[str, float, float]]:
        """(bucket key, rate per second, burst) of each limit the call counts against."""
        limits = self.limits
        if limits is None:
            return []
        speed = limits.speed
        if method == "chat.postMessage":
            channel = str(args.get("channel"))
            rate = limits.posts_per_second * speed
            return [(f"channel:{channel}", rate, limits.post_burst)]
        tier = METHOD_TIERS.get(method)
        if tier is None:
            return []
        rate = TIER_PER_MINUTE[tier] / 60.0 * speed
        keys = [(f"method:{method}", rate, rate * limits.tier_burst_s / speed)]
        if method == "chat.appendStream":
            stream = f"stream:{args.get('channel')}:{args.get('ts')}"
            keys.append((stream, limits.appends_per_second * speed, limits.append_burst))
        return keys

    def _retry_after(
        self, call: Call, method: str, args: JsonObject, scripted: float | None
    ) -> float | None:
        """Seconds of the Retry-After this call earns (None: it is within the limits), and
        whether it came before an earlier Retry-After ran out (`ignored_retry_after`)."""
        now = time.monotonic()
        same = _identity(method, args)
        keys = [_slow_down_key(method, args)] + [k for k, _, _ in self._limit_keys(method, args)]
        ignored = self._retry_of.get(same, 0.0) > now + 0.002  # this call, retried too soon
        for key in keys:
            # Calls already on their way when Slack said 429 arrive within IN_FLIGHT_S.
            known = now - self._issued.get(key, now) > IN_FLIGHT_S
            ignored = ignored or (known and self._retry_until.get(key, 0.0) > now + 0.002)
        if ignored:
            self.ignored_retry_after.append(call)
        seconds = scripted if scripted is not None else self._earned(method, args)
        if seconds is None:
            return None
        for key in keys:
            self._retry_until[key] = max(self._retry_until.get(key, 0.0), now + seconds)
            self._issued[key] = now
        self._retry_of[same] = now + seconds
        return seconds

    def _earned(self, method: str, args: JsonObject) -> float | None:
        wait = 0.0
        for key, rate, burst in self._limit_keys(method, args):
            bucket = self._buckets.get(key)
            if bucket is None:
                bucket = self._buckets[key] = _Bucket(rate, burst)
            wait = max(wait, bucket.take())
        if wait <= 0:
            return None
        limits = self.limits
        assert limits is not None
        if limits.retry_after_s is not None:
            return limits.retry_after_s
        if limits.speed == 1.0:
            return float(max(1, -int(-wait // 1)))  # whole seconds, as Slack sends
        return max(0.001, round(wait, 3))

    def count(self, method: str | None = None) -> int:
        """Calls made (answered or not), of `method` or of all."""
        return sum(1 for c in self.calls if method is None or c.method == method)

    def _over_post_limit(self, method: str, args: JsonObject) -> bool:
        if self._post_limit is None or method != "chat.postMessage":
            return False
        rate, burst = self._post_limit
        channel = str(args.get("channel"))
        now = time.monotonic()
        tokens, at = self._post_buckets.get(channel, (float(burst), now))
        tokens = min(float(burst), tokens + (now - at) * rate)
        if tokens < 1.0:
            self._post_buckets[channel] = (tokens, now)
            return True
        self._post_buckets[channel] = (tokens - 1.0, now)
        return False

    # -- what the app sent --------------------------------------------------------------
    def calls_to(self, method: str) -> list[Call]:
        """Calls of `method` that were answered (429s, HTTP errors and hangs left out)."""
        return [c for c in self.calls if c.method == method and not (c.rate_limited or c.failed)]

    def thread(self, channel: str, thread_ts: str) -> list[Message]:
        """Messages the app posted (not deleted, not ephemeral) in one thread, in order."""
        return [
            m
            for m in self.messages
            if m.channel == channel
            and m.thread_ts == thread_ts
            and not m.deleted
            and m.ephemeral_to is None
        ]

    def ephemerals(self, user: str | None = None) -> list[Message]:
        return [
            m
            for m in self.messages
            if m.ephemeral_to is not None and (user is None or m.ephemeral_to == user)
        ]

    def message(self, channel: str, ts: str) -> Message:
        for m in self.messages:
            if m.channel == channel and m.ts == ts and m.ephemeral_to is None:
                return m
        raise KeyError((channel, ts))

    def files_in(self, channel: str, thread_ts: str) -> list[UploadedFile]:
        return [f for f in self.files.values() if f.channel == channel and f.thread_ts == thread_ts]

    async def wait_for(self, predicate: Callable[[], Any], within_s: float = 10.0) -> Any:
        """Wait until `predicate()` is truthy (checked after every call); return its value."""
        deadline = time.monotonic() + within_s
        while True:
            value = predicate()
            if value:
                return value
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"fake Slack: condition not met within {within_s} s")
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), min(remaining, 0.25))

    # -- lifecycle ----------------------------------------------------------------------
    async def stop(self) -> None:
        self._stopping.set()
        await super().stop()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    @property
    def api_url(self) -> str:
        """The Web API base URL for `AsyncWebClient(base_url=…)` (ends with a slash)."""
        return f"{self.url}/api/"

    def build(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/api/{method}", self._api)
        app.router.add_get("/api/{method}", self._api)
        app.router.add_post("/upload/{file_id}", self._upload)
        app.router.add_get("/socket", self._socket)
        return app

    # -- the endpoints ------------------------------------------------------------------
    async def _arguments(self, request: web.Request) -> JsonObject:
        args: JsonObject = dict(request.query)
        if request.can_read_body:
            if request.content_type == "application/json":
                args.update(await request.json())
            else:
                args.update(dict(await request.post()))
        for name in ("blocks", "files", "attachments", "view"):
            if isinstance(args.get(name), str):
                with contextlib.suppress(ValueError):
                    args[name] = json.loads(args[name])
        return args

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        args = await self._arguments(request)
        authorization = request.headers.get("Authorization", "")
        token = authorization.removeprefix("Bearer ") or args.pop("token", None)
        call = Call(method, args, token)
        self.calls.append(call)
        try:
            if self.latency_s:
                await asyncio.sleep(self.latency_s)
            hangs = self._hangs.get(method)
            if hangs:
                call.failed = True
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), hangs.popleft())
                return web.json_response({"ok": False, "error": "timeout"}, status=504)
            http_errors = self._http_errors.get(method)
            if http_errors:
                call.failed = True
                return web.Response(status=http_errors.popleft(), text="upstream trouble")
            limits = self._rate_limits.get(method)
            scripted = limits.popleft() if limits else None
            seconds = self._retry_after(call, method, args, scripted)
            if seconds is not None or self._over_post_limit(method, args):
                self.rate_limited.append(method)
                call.rate_limited = True
                retry_after = "1" if seconds is None else f"{seconds:g}"
                return web.json_response(
                    {"ok": False, "error": "ratelimited"},
                    status=429,
                    headers={"Retry-After": retry_after},
                )
            app_token = method == "apps.connections.open" and str(token).startswith("xapp-")
            if self.token is not None and token != self.token and not app_token:
                return web.json_response({"ok": False, "error": "invalid_auth"})
            failures = self._failures.get(method)
            if failures:
                return web.json_response({"ok": False, "error": failures.popleft()})
            problem = message_problem(method, args) if self.checks_messages else None
            if problem is not None:
                self.invalid.append((method, problem))
                error = "msg_too_long" if problem.startswith("text of") else "invalid_blocks"
                return web.json_response({"ok": False, "error": error})
            channel = args.get("channel") or args.get("channel_id")
            if isinstance(channel, str) and channel in self.refused_channels:
                return web.json_response({"ok": False, "error": self.refused_channels[channel]})
            handler = _HANDLERS.get(method)
            if handler is None:
                return web.json_response({"ok": False, "error": "unknown_method"})
            return web.json_response({"ok": True, **handler(self, args)})
        finally:
            self._changed.set()

    async def _upload(self, request: web.Request) -> web.Response:
        file_id = request.match_info["file_id"]
        uploaded = self.files.get(file_id)
        if uploaded is None:
            return web.Response(status=404, text="unknown upload")
        uploaded.content = await request.read()
        self.calls.append(
            Call("upload", {"file_id": file_id, "bytes": len(uploaded.content)}, None)
        )
        self._changed.set()
        return web.Response(text=f"OK - {len(uploaded.content)}")

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        """Socket Mode: say hello, then collect the client's acknowledgements."""
        socket = web.WebSocketResponse(autoping=True)
        await socket.prepare(request)
        self.sockets.append(socket)
        self._changed.set()
        await socket.send_json({"type": "hello", "num_connections": 1})
        async for message in socket:
            if message.type == WSMsgType.TEXT:
                self.socket_acks.append(json.loads(message.data))
                self._changed.set()
        self.sockets.remove(socket)
        return socket

    async def push(self, kind: str, payload: JsonObject) -> str:
        """Send an envelope (kind: events_api, interactive) to the connected Socket Mode
        client; returns its envelope id."""
        envelope_id = f"envelope-{next(self._envelopes)}"
        envelope = {
            "envelope_id": envelope_id,
            "type": kind,
            "payload": payload,
            "accepts_response_payload": kind != "events_api",
            "retry_attempt": 0,
            "retry_reason": "",
        }
        await self.sockets[-1].send_json(envelope)
        return envelope_id

    # -- methods ------------------------------------------------------------------------
    def _next_ts(self) -> str:
        return f"{1_700_000_000 + next(self._ts)}.000100"

    def _auth_test(self, args: JsonObject) -> JsonObject:
        return {
            "url": "https://fake.slack.com/",
            "team": "Fake Team",
            "user": "dbagent",
            "team_id": TEAM_ID,
            "user_id": BOT_USER_ID,
            "bot_id": BOT_ID,
            "is_enterprise_install": False,
        }

    def _post_message(self, args: JsonObject) -> JsonObject:
        message = Message(
            channel=args["channel"],
            ts=self._next_ts(),
            text=args.get("text") or "",
            blocks=args.get("blocks") or [],
            thread_ts=args.get("thread_ts"),
        )
        self.messages.append(message)
        payload = {"text": message.text, "blocks": message.blocks, "ts": message.ts}
        return {"channel": message.channel, "ts": message.ts, "message": payload}

    def _existing(self, args: JsonObject) -> Message:
        try:
            return self.message(args["channel"], args["ts"])
        except KeyError:
            raise _Failure("message_not_found") from None

    def _update(self, args: JsonObject) -> JsonObject:
        message = self._existing(args)
        message.text = args.get("text") or message.text
        if "blocks" in args:
            message.blocks = args["blocks"] or []
        message.edits += 1
        return {"channel": message.channel, "ts": message.ts, "text": message.text}

    def _delete(self, args: JsonObject) -> JsonObject:
        message = self._existing(args)
        message.deleted = True
        return {"channel": message.channel, "ts": message.ts}

    def _post_ephemeral(self, args: JsonObject) -> JsonObject:
        message = Message(
            channel=args["channel"],
            ts=self._next_ts(),
            text=args.get("text") or "",
            blocks=args.get("blocks") or [],
            thread_ts=args.get("thread_ts"),
            ephemeral_to=args["user"],
        )
        self.messages.append(message)
        return {"message_ts": message.ts}

    def _get_upload_url(self, args: JsonObject) -> JsonObject:
        file_id = f"F{next(self._file_ids):08d}"
        self.files[file_id] = UploadedFile(
            id=file_id,
            filename=args["filename"],
            length=int(args["length"]),
            snippet_type=args.get("snippet_type"),
        )
        return {"upload_url": f"{self.url}/upload/{file_id}", "file_id": file_id}

    def _complete_upload(self, args: JsonObject) -> JsonObject:
        shared = []
        for entry in args["files"]:
            uploaded = self.files[entry["id"]]
            uploaded.title = entry.get("title")
            uploaded.channel = args.get("channel_id")
            uploaded.thread_ts = args.get("thread_ts")
            uploaded.initial_comment = args.get("initial_comment")
            shared.append({"id": uploaded.id, "title": uploaded.title, "name": uploaded.filename})
        if args.get("channel_id"):
            # Sharing posts a message holding the files; blocks are ignored with a comment.
            comment = args.get("initial_comment")
            message = Message(
                channel=args["channel_id"],
                ts=self._next_ts(),
                text=comment or "",
                blocks=[] if comment else list(args.get("blocks") or []),
                thread_ts=args.get("thread_ts"),
                files=[entry["id"] for entry in args["files"]],
            )
            self.messages.append(message)
        return {"files": shared}

    def _usergroup_members(self, args: JsonObject) -> JsonObject:
        group = args["usergroup"]
        if group not in self.usergroups:
            raise _Failure("no_such_subteam")
        return {"users": self.usergroups[group]}

    def _users_info(self, args: JsonObject) -> JsonObject:
        user = args["user"]
        if user not in self.users:
            raise _Failure("user_not_found")
        name = user.lower()
        return {
            "user": {
                "id": user,
                "name": name,
                "real_name": f"Person {user}",
                "tz": self.users[user],
                "profile": {"display_name": name, "real_name": f"Person {user}"},
            }
        }

    def _set_status(self, args: JsonObject) -> JsonObject:
        if self.set_status_error:
            raise _Failure(self.set_status_error)
        return {}

    def _permalink(self, args: JsonObject) -> JsonObject:
        message = self._existing({"channel": args["channel"], "ts": args["message_ts"]})
        path = f"{message.channel}/p{message.ts.replace('.', '')}"
        return {"channel": message.channel, "permalink": f"https://fake.slack.com/archives/{path}"}

    def _nothing(self, args: JsonObject) -> JsonObject:
        return {}

    def _connections_open(self, args: JsonObject) -> JsonObject:
        return {"url": f"ws://127.0.0.1:{self._port}/socket"}

    def _conversation_info(self, args: JsonObject) -> JsonObject:
        channel = args["channel"]
        private = channel in self.private_channels or channel.startswith(("G", "D"))
        return {
            "channel": {
                "id": channel,
                "is_im": channel.startswith("D"),
                "is_mpim": False,
                "is_private": private,
                "is_member": channel not in self.channels_without_bot,
            }
        }

    def _views_open(self, args: JsonObject) -> JsonObject:
        trigger_id = args["trigger_id"]
        if trigger_id in self._used_triggers:
            raise _Failure("exchanged_trigger_id")
        self._used_triggers.add(trigger_id)
        view = args["view"]
        if not isinstance(view, dict) or view.get("type") != "modal":
            raise _Failure("invalid_arguments")
        opened = OpenedView(f"V{next(self._view_ids):08d}", trigger_id, view, f"h{time.time()}")
        self.views.append(opened)
        return {"view": {**view, "id": opened.id, "hash": opened.hash}}

    def _views_update(self, args: JsonObject) -> JsonObject:
        opened = next((v for v in self.views if v.id == args.get("view_id")), None)
        if opened is None:
            raise _Failure("not_found")
        opened.view = args["view"]
        opened.hash = f"h{time.time()}"
        return {"view": {**opened.view, "id": opened.id, "hash": opened.hash}}


class _Failure(Exception):
    def __init__(self, error: str) -> None:
        super().__init__(error)
        self.error = error


def _safely(handler: Callable[[FakeSlack, JsonObject], JsonObject]) -> Any:
    def run(server: FakeSlack, args: JsonObject) -> JsonObject:
        try:
            return handler(server, args)
        except _Failure as failure:
            return {"ok": False, "error": failure.error}
        except KeyError as missing:
            return {"ok": False, "error": f"missing_or_unknown:{missing}"}

    return run


_HANDLERS: dict[str, Callable[[FakeSlack, JsonObject], JsonObject]] = {
    name: _safely(handler)
    for name, handler in {
        "auth.test": FakeSlack._auth_test,
        "chat.postMessage": FakeSlack._post_message,
        "chat.update": FakeSlack._update,
        "chat.delete": FakeSlack._delete,
        "chat.postEphemeral": FakeSlack._post_ephemeral,
        "chat.getPermalink": FakeSlack._permalink,
        "files.getUploadURLExternal": FakeSlack._get_upload_url,
        "files.completeUploadExternal": FakeSlack._complete_upload,
        "usergroups.users.list": FakeSlack._usergroup_members,
        "users.info": FakeSlack._users_info,
        "assistant.threads.setStatus": FakeSlack._set_status,
        "reactions.add": FakeSlack._nothing,
        "reactions.remove": FakeSlack._nothing,
        "conversations.info": FakeSlack._conversation_info,
        "apps.connections.open": FakeSlack._connections_open,
        "views.open": FakeSlack._views_open,
        "views.update": FakeSlack._views_update,
    }.items()
}


# -- streaming, assistant threads and App Home ------------------------------------------
# Kept apart from the methods above: chat.startStream / appendStream / stopStream,
# assistant.threads.setSuggestedPrompts and views.publish, recorded on the server.

TASK_STATUSES = {"pending", "in_progress", "complete", "error"}
_CHUNK_TYPES = {"markdown_text", "task_update", "plan_update", "blocks"}


@dataclass
class Stream:
    """One streamed message: every chunk it was sent, in order, and how it ended."""

    channel: str
    ts: str
    thread_ts: str | None
    recipient_user_id: str | None
    recipient_team_id: str | None
    chunks: list[JsonObject] = field(default_factory=list)
    stopped: bool = False
    final_blocks: list[JsonObject] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(c.get("text", "") for c in self.chunks if c["type"] == "markdown_text")

    def tasks(self) -> dict[str, JsonObject]:
        """Each task id with its latest update."""
        latest: dict[str, JsonObject] = {}
        for chunk in self.chunks:
            if chunk["type"] == "task_update":
                latest[chunk["id"]] = chunk
        return latest


def streams(server: FakeSlack) -> list[Stream]:
    return server.__dict__.setdefault("_streams", [])


def published_views(server: FakeSlack) -> dict[str, JsonObject]:
    """user id → the Home view last published for them."""
    return server.__dict__.setdefault("_home_views", {})


def suggested_prompts(server: FakeSlack) -> list[JsonObject]:
    return server.__dict__.setdefault("_suggested_prompts", [])


def _stream_at(server: FakeSlack, args: JsonObject) -> Stream:
    for stream in streams(server):
        if stream.channel == args.get("channel") and stream.ts == args.get("ts"):
            if stream.stopped:
                raise _Failure("message_not_in_streaming_state")
            return stream
    raise _Failure("message_not_found")


def _take_chunks(stream: Stream, message: Message, args: JsonObject) -> None:
    chunks = list(args.get("chunks") or [])
    if args.get("markdown_text"):
        chunks.insert(0, {"type": "markdown_text", "text": args["markdown_text"]})
    for chunk in chunks:
        if chunk.get("type") not in _CHUNK_TYPES:
            raise _Failure("invalid_chunks")
        if chunk["type"] == "task_update" and (
            not chunk.get("id")
            or not chunk.get("title")
            or chunk.get("status") not in TASK_STATUSES
        ):
            raise _Failure("invalid_chunks")
        if chunk["type"] == "markdown_text" and len(chunk.get("text", "")) > 12_000:
            raise _Failure("msg_too_long")
    stream.chunks.extend(chunks)
    message.text = stream.text
    message.edits += 1


def _start_stream(server: FakeSlack, args: JsonObject) -> JsonObject:
    channel = args["channel"]
    if not args.get("thread_ts"):
        raise _Failure("invalid_arguments")
    if not channel.startswith("D"):  # in channels Slack must know whom the stream is for
        if not args.get("recipient_team_id"):
            raise _Failure("missing_recipient_team_id")
        if not args.get("recipient_user_id"):
            raise _Failure("missing_recipient_user_id")
    message = Message(
        channel=channel, ts=server._next_ts(), text="", blocks=[], thread_ts=args["thread_ts"]
    )
    stream = Stream(
        channel,
        message.ts,
        args["thread_ts"],
        args.get("recipient_user_id"),
        args.get("recipient_team_id"),
    )
    _take_chunks(stream, message, args)
    server.messages.append(message)
    streams(server).append(stream)
    return {"channel": channel, "ts": message.ts}


def _append_stream(server: FakeSlack, args: JsonObject) -> JsonObject:
    stream = _stream_at(server, args)
    _take_chunks(stream, server.message(stream.channel, stream.ts), args)
    return {"channel": stream.channel, "ts": stream.ts}


def _stop_stream(server: FakeSlack, args: JsonObject) -> JsonObject:
    stream = _stream_at(server, args)
    message = server.message(stream.channel, stream.ts)
    _take_chunks(stream, message, args)
    stream.stopped = True
    stream.final_blocks = list(args.get("blocks") or [])
    message.blocks = stream.final_blocks
    return {"channel": stream.channel, "ts": stream.ts, "message": {"text": message.text}}


def _set_suggested_prompts(server: FakeSlack, args: JsonObject) -> JsonObject:
    prompts = args.get("prompts")
    if not isinstance(prompts, list) or not 1 <= len(prompts) <= 4:
        raise _Failure("invalid_arguments")
    if any(not p.get("title") or not p.get("message") for p in prompts):
        raise _Failure("invalid_arguments")
    suggested_prompts(server).append(args)
    return {}


def _views_publish(server: FakeSlack, args: JsonObject) -> JsonObject:
    view = args.get("view")
    if not isinstance(view, dict) or view.get("type") != "home":
        raise _Failure("invalid_arguments")
    if len(view.get("blocks") or []) > 100:
        raise _Failure("invalid_blocks")
    published_views(server)[args["user_id"]] = view
    return {"view": {**view, "id": f"VHOME{args['user_id']}"}}


def refuse_block_type(server: FakeSlack, block_type: str) -> None:
    """From now on, messages holding a block of `block_type` get invalid_blocks (a
    workspace or surface that does not take that block)."""
    server.__dict__.setdefault("_refused_block_types", set()).add(block_type)


def refuse_block_id(server: FakeSlack, block_id: str) -> None:
    """From now on, messages holding a block whose block_id is `block_id` get invalid_blocks
    (e.g. "approval": every approval card is refused, and nothing else)."""
    server.__dict__.setdefault("_refused_block_ids", set()).add(block_id)


def _refusing(method: str) -> Callable[[FakeSlack, JsonObject], JsonObject]:
    accept = _HANDLERS[method]

    def handler(server: FakeSlack, args: JsonObject) -> JsonObject:
        refused = server.__dict__.get("_refused_block_types") or set()
        refused_ids = server.__dict__.get("_refused_block_ids") or set()
        blocks = args.get("blocks") or []
        if isinstance(blocks, list) and any(
            b.get("type") in refused or b.get("block_id") in refused_ids for b in blocks
        ):
            return {"ok": False, "error": "invalid_blocks"}
        return accept(server, args)

    return handler


_HANDLERS.update(
    {
        "chat.postMessage": _refusing("chat.postMessage"),
        "files.completeUploadExternal": _refusing("files.completeUploadExternal"),
    }
)
_HANDLERS.update(
    {
        name: _safely(handler)
        for name, handler in {
            "chat.startStream": _start_stream,
            "chat.appendStream": _append_stream,
            "chat.stopStream": _stop_stream,
            "assistant.threads.setSuggestedPrompts": _set_suggested_prompts,
            "views.publish": _views_publish,
        }.items()
    }
)


@pytest.fixture
async def fake_slack() -> AsyncIterator[FakeSlack]:
    """A started fake Slack with one user in Europe/Paris; import it into a conftest."""
    server = FakeSlack(users={"U0ASKER": "Europe/Paris"})
    await server.start()
    yield server
    await server.stop()
