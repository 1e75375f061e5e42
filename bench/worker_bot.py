"""The bot as bench_workers.py runs it: `python -m bot serve --workers N` in a process of its
own, configured as a deployment is (environment and dbagent.toml), sent signed events; and
what the benchmark reads of its processes from Linux's /proc: their CPU time, the workers the
supervisor started, and which worker owns a connection.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import os
import secrets
import signal
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.bench_slack import DATABASE, SECRET, TOKEN, mention_event
from bench.worker_fakes import Fakes
from bot.slack.server import EVENTS_PATH
from tests.fakes.local import free_port

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
HOOK = Path(__file__).resolve().parent / "profile_hook"
START_S = 90.0  # for the workers to start serving
ANSWER_S = float(os.environ.get("BENCH_ANSWER_S", 120))  # for a round's threads to be answered
SERVING = "is serving Slack over HTTP"  # each worker's log line once it listens
PROFILE_LINE = "bench profile"  # the profile hook's lines

CONFIG = """
[[databases]]
name = "{name}"
url = "{url}"
environment = "staging"

[limits]
model_max_retries = 0
pool_size = 10
"""


@dataclass
class Round:
    wall: float  # from the first event sent to the last thread's last Slack call
    turns: list[float]  # each thread: from its event being sent to its last Slack call
    owners: Counter[int]  # worker pid → threads it answered (0: not attributed)
    api_calls: int
    # when each thread's model calls reached the model, from the first event sent: the
    # threads' first calls, their second calls, …
    model_calls: list[list[float]]


class ServedBot:
    """`python -m bot serve --workers N` against the fakes, and a client sending it events."""

    numbers = itertools.count(1)  # events and channels, unique over the whole run

    def __init__(
        self, workers: int, env: dict[str, str], fakes: Fakes, *, floor: bool = False
    ) -> None:
        self.workers, self.env, self.fakes = workers, env, fakes
        self.port = int(env["PORT"])
        # The floor: bench/floor_bot.py, a minimal Bolt app, in one process.
        self.command = ["-m", "bench.floor_bot"] if floor else ["-m", "bot", "serve"]
        if floor:
            root = str(Path(__file__).resolve().parent.parent)
            self.env = {
                **env,
                "PYTHONPATH": os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")])),
            }

    async def start(self) -> None:
        workers = ["--workers", str(self.workers)] if self.command[1] == "bot" else []
        self.process = await asyncio.create_subprocess_exec(
            sys.executable, *self.command, *workers, env=self.env, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        assert self.process.stderr is not None
        self.log = BotLog(self.process.stderr)
        try:
            await self.log.wait_for(SERVING, self.workers, START_S)
        except RuntimeError as exc:
            if self.process.returncode is None:
                self.process.kill()
            await self.process.wait()
            raise RuntimeError(f"{exc}:\n{self.log.tail()}") from None
        self.pids = worker_pids(self.process.pid, self.workers)

    async def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(self.process.wait(), 60)
        await self.log.reader
        if code != 0:
            raise RuntimeError(f"the workers exited with {code}:\n{self.log.tail()}")

    def mention(self, text: str) -> tuple[str, bytes]:
        """A signed mention in a channel of its own: its channel, and the whole HTTP request.

        The requests are written out in full before the clock starts, and sent by asyncio's
        streams: aiohttp's client took about 0.3 ms more CPU per event, on the bot's cores,
        during the very burst being measured (Slack sends its events from its own)."""
        number = next(self.numbers)
        channel = f"CW{number:07d}"
        body, headers, _ = mention_event(number, text, channel)
        head = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
        request = (
            f"POST {EVENTS_PATH} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n{head}"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        ).encode() + body
        return channel, request

    async def send(self, request: bytes) -> float:
        """Send one event (on a connection of its own); when it was sent."""
        sent = time.monotonic()
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        try:
            writer.write(request)
            status = await reader.readline()
            assert status.split()[1:2] == [b"200"], f"event refused: {status!r}"
            await reader.read()  # to the end: the server closes the connection
        finally:
            writer.close()
        return sent

    async def run(
        self, threads: int, label: str, answered: Callable[[], None] | None = None
    ) -> Round:
        """`threads` mentions at once, each in a channel of its own, until all are answered;
        then `answered()`, before this process reads /proc to attribute the threads.

        This process's collector waits until the round is over: a full collection would hold
        back the events it sends (see worker_fakes.serve)."""
        gc.disable()
        try:
            return await self._run(threads, label, answered)
        finally:
            gc.enable()

    async def _run(self, threads: int, label: str, answered: Callable[[], None] | None) -> Round:
        # Slack signs the events on its own servers: they are ready before the clock starts.
        questions = [f"{label} {i}" for i in range(threads)]
        events = dict(self.mention(question) for question in questions)
        began = time.monotonic()
        sent = dict(
            zip(events, await asyncio.gather(*map(self.send, events.values())), strict=True)
        )
        report = await self.fakes.report(list(sent), questions, within_s=ANSWER_S)
        if answered is not None:  # before this process reads /proc for the owners below
            answered()
        owners_by_port = socket_owners(self.pids, self.fakes.slack_port)
        unanswered = [c for c, seen in report.threads.items() if not seen.done]
        if unanswered:
            seen = "; ".join(f"{c}: {report.threads[c]}" for c in unanswered[:5])
            raise RuntimeError(
                f"{len(unanswered)} of {threads} threads ({label}) not answered; seen: {seen}\n"
                f"the bot's log ends:\n{self.log.tail()}"
            )
        twice = [c for c, seen in report.threads.items() if seen.answers != 1]
        if twice:
            raise RuntimeError(f"{len(twice)} threads ({label}) answered more than once")
        owners: Counter[int] = Counter()
        for seen in report.threads.values():
            owners[next((owners_by_port[p] for p in seen.ports if p in owners_by_port), 0)] += 1
        return Round(
            wall=max(seen.last_at for seen in report.threads.values()) - began,
            turns=[seen.last_at - sent[c] for c, seen in report.threads.items()],
            owners=owners,
            api_calls=report.api_calls,
            model_calls=[
                sorted(times[call] - began for times in report.model_calls if len(times) > call)
                for call in range(max(map(len, report.model_calls), default=0))
            ],
        )

    async def toggle_profiles(self, state: str) -> None:
        """Signal each worker's profile hook, and wait until each says it is `state`."""
        for pid in self.pids:
            os.kill(pid, signal.SIGUSR1)
        for pid in self.pids:
            await self.log.wait_for(f"{PROFILE_LINE} {state} {pid}", 1, within_s=30)


def bot_environment(
    directory: Path, database_url: str, state_url: str, fakes: Fakes, profile_dir: Path | None
) -> dict[str, str]:
    """The environment of a deployment, pointed at the fakes, MariaDB and Redis."""
    config = directory / "dbagent.toml"
    config.write_text(CONFIG.format(name=DATABASE, url=database_url))
    ours = ("DBAGENT_", "SLACK_", "OPENAI_")
    env = {key: value for key, value in os.environ.items() if not key.startswith(ours)}
    env.update(
        DBAGENT_CONFIG=str(config),
        DBAGENT_STATE_URL=state_url,
        DBAGENT_STATE_KEY=os.environ.get("DBAGENT_STATE_KEY") or secrets.token_hex(32),
        SLACK_BOT_TOKEN=TOKEN,
        SLACK_SIGNING_SECRET=SECRET,
        SLACK_API_URL=fakes.slack_api_url,
        OPENAI_BASE_URL=fakes.model_url,
        OPENAI_API_KEY="bench",
        OPENAI_MODEL="fake-model",
        PORT=str(free_port()),
    )
    if profile_dir is not None:
        env["BENCH_PROFILE_DIR"] = str(profile_dir)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HOOK), env.get("PYTHONPATH")]))
    return env


class BotLog:
    """The bot's stderr, read to its end (so the pipe never fills), and waited on."""

    def __init__(self, stream: asyncio.StreamReader) -> None:
        self.lines: list[str] = []
        self._changed = asyncio.Event()
        self.reader = asyncio.create_task(self._read(stream))

    async def _read(self, stream: asyncio.StreamReader) -> None:
        while line := (await stream.readline()).decode(errors="replace"):
            self.lines.append(line.rstrip())
            self._changed.set()
        self._changed.set()

    def count(self, text: str) -> int:
        return sum(text in line for line in self.lines)

    async def wait_for(self, text: str, times: int, within_s: float) -> None:
        """Until `times` lines say `text`; RuntimeError if the bot stops or is slower."""
        try:
            async with asyncio.timeout(within_s):
                while self.count(text) < times:
                    if self.reader.done():
                        raise RuntimeError(f"the bot stopped before saying {text!r}")
                    self._changed.clear()
                    await self._changed.wait()
        except TimeoutError:
            raise RuntimeError(f"the bot did not say {text!r} within {within_s:.0f} s") from None

    def tail(self, lines: int = 20) -> str:
        return "\n".join(self.lines[-lines:])


# -- /proc -------------------------------------------------------------------------------


@dataclass
class CpuSample:
    """CPU seconds of some processes (all their threads), and of the whole machine: busy,
    and in all, over every core.

    A process's time is the scheduler's own count (/proc/PID/task/*/schedstat, in ns), not
    utime + stime, which the kernel keeps in clock ticks of 10 ms: a worker's CPU over one
    round is a few tenths of a second, which ticks leave off by several percent. Beside it,
    how many times the process's threads were put on a core (the event loop sleeping and
    waking up again, mostly): waking costs CPU too.
    """

    by_pid: dict[int, float]
    wakeups: dict[int, int]
    busy: float
    total: float

    @classmethod
    def take(cls, pids: list[int]) -> CpuSample:
        ticks = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        idle = ticks[3] + ticks[4]  # idle, iowait
        by_pid, wakeups = {}, {}
        for pid in pids:
            on_cpu_ns, runs = _scheduled(pid)
            by_pid[pid], wakeups[pid] = on_cpu_ns / 1e9, runs
        return cls(by_pid, wakeups, (sum(ticks) - idle) / CLOCK_TICKS, sum(ticks) / CLOCK_TICKS)

    def since(self, earlier: CpuSample) -> CpuSample:
        by_pid = {pid: seconds - earlier.by_pid[pid] for pid, seconds in self.by_pid.items()}
        wakeups = {pid: runs - earlier.wakeups[pid] for pid, runs in self.wakeups.items()}
        return CpuSample(by_pid, wakeups, self.busy - earlier.busy, self.total - earlier.total)

    @property
    def cores_busy(self) -> float:
        return self.busy / self.total * (os.cpu_count() or 1) if self.total else 0.0


def _scheduled(pid: int) -> tuple[int, int]:
    """Nanoseconds on a core, and times put on one, summed over the process's threads."""
    on_cpu_ns = runs = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            fields = (task / "schedstat").read_text().split()
        except FileNotFoundError:  # the thread ended meanwhile
            continue
        on_cpu_ns += int(fields[0])
        runs += int(fields[2])
    return on_cpu_ns, runs


def _stat(pid: int) -> list[str]:
    # The fields after the command name, which may itself hold spaces or parentheses.
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def worker_pids(supervisor: int, workers: int) -> list[int]:
    """The serving processes: the supervisor's children, or the process itself when it
    serves alone (`--workers 1` runs no supervisor)."""
    if workers == 1:
        return [supervisor]
    children = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int(_stat(int(entry.name))[1]) == supervisor:
                    children.append(int(entry.name))
            except (OSError, IndexError):
                continue  # gone meanwhile
    if len(children) != workers:
        raise RuntimeError(f"{len(children)} worker processes found, {workers} expected")
    return sorted(children)


def socket_owners(pids: list[int], remote_port: int) -> dict[int, int]:
    """Local port → pid, for the processes' open TCP connections to `remote_port`."""
    inodes: dict[int, int] = {}
    for pid in pids:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                link = os.readlink(fd)
            except OSError:
                continue
            if link.startswith("socket:["):
                inodes[int(link[len("socket:[") : -1])] = pid
    owners: dict[int, int] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, remote, inode = fields[1], fields[2], int(fields[9])
            if int(remote.rsplit(":", 1)[1], 16) == remote_port and inode in inodes:
                owners[int(local.rsplit(":", 1)[1], 16)] = inodes[inode]
    return owners
