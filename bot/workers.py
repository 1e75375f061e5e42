"""`python -m bot serve --workers N`: N serving processes on this machine, sharing Redis.

Each worker is a whole `python -m bot serve` of its own (Socket Mode: a connection each,
and Slack gives every event to one of them; HTTP: they share the port). They share state
through DBAGENT_STATE_URL, so any of them may take any event or click; the embedded store
belongs to one process and is refused here. SIGTERM and SIGINT are passed on to every
worker (a second one too, which makes them exit at once); when one worker stops, the others
are stopped too, and the worst exit status wins.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from types import FrameType

from bot.config import ConfigError, load_settings

WORKER_ENV = "DBAGENT_WORKER"  # set in each worker: its number, from 1
POLL_S = 0.2


def parse_workers(args: list[str]) -> int:
    """The N of `--workers N` (1 without it); ConfigError on anything else."""
    if not args:
        return 1
    if len(args) == 2 and args[0] == "--workers" and args[1].isdigit() and int(args[1]) >= 1:
        return int(args[1])
    raise ConfigError(f"serve takes only --workers N (N ≥ 1), not {' '.join(args)!r}")


def serve_workers(count: int) -> int:
    settings = load_settings()
    if not settings.dbagent_state_url:
        raise ConfigError(
            "--workers needs shared state: set DBAGENT_STATE_URL=redis://host:6379/0 (the "
            "embedded store in DBAGENT_STATE_DIR serves one process only)"
        )
    workers = [
        subprocess.Popen(
            [sys.executable, "-m", "bot", "serve"], env={**os.environ, WORKER_ENV: str(n + 1)}
        )
        for n in range(count)
    ]

    signalled: set[int] = set()
    received = [0]

    def stop(signum: int, again: bool) -> None:
        for worker in workers:
            if worker.poll() is None and (again or worker.pid not in signalled):
                signalled.add(worker.pid)
                worker.send_signal(signum)

    def pass_on(signum: int, frame: FrameType | None) -> None:
        # A person's second signal is passed on too (the workers then exit at once).
        received[0] += 1
        stop(signum, again=received[0] > 1)

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, pass_on)
    while all(worker.poll() is None for worker in workers):
        time.sleep(POLL_S)
    stop(signal.SIGTERM, again=False)  # one stopped: stop the rest, gracefully
    codes = [worker.wait() for worker in workers]
    return max(codes, key=abs)
