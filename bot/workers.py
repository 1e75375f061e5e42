"""`python -m bot serve --workers N`: N serving processes on this machine, sharing Redis.

Each worker is a whole `python -m bot serve` of its own (Socket Mode: a connection each,
and Slack gives every event to one of them; HTTP: they share the port). They share state
through DBAGENT_STATE_URL, so any of them may take any event or click (and their metrics
through one PROMETHEUS_MULTIPROC_DIR: /metrics on any worker sums all); the embedded store
belongs to one process and is refused here.

The parent supervises them. A worker that dies (a crash, the OOM killer, SIGKILL) is started
again after a pause that doubles with each death in a row (1 s, 2 s, 4 s … at most 30 s;
back to 1 s once a worker has lived a minute) while the others keep serving; a worker that
exits with status 2 (its configuration is wrong, which a restart will not mend) stops them
all (one that exits with 3, the store out of reach at its start, is started again like a
crash). SIGTERM and SIGINT are passed on to every worker (a second one too, which makes them
exit at once) and nothing is restarted after; a worker still running its shutdown well past
`[slack] shutdown_grace_s` is killed, so the parent always ends. The parent's signal handlers
only note the signal, and are in place before the first worker starts: a signal that
arrives while workers are being started reaches every worker started, before or after it.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from bot.config import ConfigError, load_settings
from bot.observability.multiprocess import (
    MULTIPROC_ENV,
    clear_multiprocess_dir,
    forget_live_gauges,
    multiprocess_dir,
)

log = logging.getLogger(__name__)

WORKER_ENV = "DBAGENT_WORKER"  # set in each worker: its number, from 1
POLL_S = 0.1
RESTART_PAUSE_S = (1.0, 30.0)  # the first pause after a death, and the longest
HEALTHY_AFTER_S = 60.0  # a worker that lived this long starts the pauses over
CONFIG_ERROR = 2  # a worker's exit status when its configuration is wrong
STORE_UNREACHABLE = 3  # a worker's, when the state store cannot be used at its start
KILL_AFTER_GRACE_S = 15.0  # past the grace period, a worker still stopping is killed


def parse_workers(args: list[str]) -> int:
    """The N of `--workers N` (1 without it); ConfigError on anything else."""
    if not args:
        return 1
    if len(args) == 2 and args[0] == "--workers" and args[1].isdigit() and int(args[1]) >= 1:
        return int(args[1])
    raise ConfigError(f"serve takes only --workers N (N ≥ 1), not {' '.join(args)!r}")


@dataclass
class _Slot:
    number: int
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    deaths: int = 0  # in a row
    restart_at: float | None = None


@dataclass
class Supervisor:
    count: int
    grace_s: float
    command: list[str] = field(default_factory=lambda: [sys.executable, "-m", "bot", "serve"])
    signals: list[int] = field(default_factory=list)  # noted by the handlers, in order
    _passed_on: int = 0
    _stop_by: float | None = None  # when stopping: the moment a worker still running is killed
    _status: int = 0

    def run(self) -> int:
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, self._note)
        slots = [_Slot(n + 1) for n in range(self.count)]
        for slot in slots:
            if not self.signals:  # a signal meanwhile: start no more
                self._start(slot)
        while True:
            self._pass_on_signals(slots)
            if self._stopping and all(not _alive(slot) for slot in slots):
                return self._status
            self._look_after(slots)
            time.sleep(POLL_S)

    @property
    def _stopping(self) -> bool:
        return self._stop_by is not None

    def _note(self, signum: int, frame: FrameType | None) -> None:
        self.signals.append(signum)  # acted on by the loop, never in the handler

    def _start(self, slot: _Slot) -> None:
        env = {**os.environ, WORKER_ENV: str(slot.number)}
        slot.process = subprocess.Popen(self.command, env=env)
        slot.started_at, slot.restart_at = time.monotonic(), None

    def _pass_on_signals(self, slots: list[_Slot]) -> None:
        while self._passed_on < len(self.signals):
            signum = self.signals[self._passed_on]
            self._passed_on += 1
            if self._passed_on == 1:
                self._stop(slots, signum)
            else:  # a person's second signal: the workers exit at once
                log.warning("second stop signal: the workers exit now")
                self._send(slots, signum)

    def _stop(self, slots: list[_Slot], signum: int) -> None:
        if not self._stopping:
            self._stop_by = time.monotonic() + self.grace_s + KILL_AFTER_GRACE_S
            self._send(slots, signum)

    def _send(self, slots: list[_Slot], signum: int) -> None:
        for slot in slots:
            if _alive(slot):
                assert slot.process is not None
                slot.process.send_signal(signum)

    def _look_after(self, slots: list[_Slot]) -> None:
        now = time.monotonic()
        for slot in slots:
            process = slot.process
            if process is not None and process.poll() is not None:
                forget_live_gauges(process.pid)  # its counters stay in the sums
                self._ended(slots, slot, process.returncode, now)
            if self._stopping:
                if _alive(slot) and self._stop_by is not None and now > self._stop_by:
                    assert slot.process is not None
                    log.error("worker %d did not stop in time: killed", slot.number)
                    slot.process.kill()
            elif slot.process is None and slot.restart_at is not None and now >= slot.restart_at:
                log.warning("starting worker %d again", slot.number)
                self._start(slot)

    def _ended(self, slots: list[_Slot], slot: _Slot, status: int, now: float) -> None:
        slot.process = None
        if self._stopping:
            # Ended by the signal passed on (before its handlers were in place): a clean stop.
            stopped = status in (-signal.SIGTERM, -signal.SIGINT)
            self._status = max(self._status, 0 if stopped else status, key=abs)
            return
        if status == CONFIG_ERROR:
            log.error("worker %d stopped on its configuration: stopping them all", slot.number)
            self._status = CONFIG_ERROR
            self._stop(slots, signal.SIGTERM)
            return
        slot.deaths = 1 if now - slot.started_at >= HEALTHY_AFTER_S else slot.deaths + 1
        first, longest = RESTART_PAUSE_S
        pause = min(first * 2 ** (slot.deaths - 1), longest)
        slot.restart_at = now + pause
        log.error(
            "worker %d ended (status %d); the others serve on, and it starts again in %.0f s",
            slot.number,
            status,
            pause,
        )


def _alive(slot: _Slot) -> bool:
    return slot.process is not None and slot.process.poll() is None


def serve_workers(count: int) -> int:
    settings = load_settings()
    if not settings.dbagent_state_url:
        raise ConfigError(
            "--workers needs shared state: set DBAGENT_STATE_URL=redis://host:6379/0 (the "
            "embedded store in DBAGENT_STATE_DIR serves one process only)"
        )
    metrics_dir, made = _metrics_dir()
    os.environ[MULTIPROC_ENV] = str(metrics_dir)  # the workers' environment
    try:
        return Supervisor(count, settings.slack.shutdown_grace_s).run()
    finally:
        if made:
            shutil.rmtree(metrics_dir, ignore_errors=True)


def _metrics_dir() -> tuple[Path, bool]:
    """Where the workers write their metrics, so /metrics on any of them sums them all:
    PROMETHEUS_MULTIPROC_DIR (emptied of a previous run's samples) or a temporary directory
    (made here, and removed at the end: True)."""
    given = multiprocess_dir()
    if given is not None:
        clear_multiprocess_dir(given)
        return given, False
    return Path(tempfile.mkdtemp(prefix="dbagent-metrics-")), True
