"""cProfile in the bot's processes, for `bench/bench_workers.py --profile` only.

That benchmark puts this directory on PYTHONPATH with BENCH_PROFILE_DIR set, so every Python
process the bot starts imports it; the bot itself knows nothing of it. In each process, a
SIGUSR1 starts profiling the main thread (where the event loop runs) and the next one stops
it and writes BENCH_PROFILE_DIR/<pid>.pstats; each says so on stderr, which the benchmark
reads ("bench profile on <pid>", "bench profile saved <pid>").
"""

from __future__ import annotations

import cProfile
import os
import signal
from pathlib import Path
from types import FrameType

_DIRECTORY = os.environ.get("BENCH_PROFILE_DIR")
_running: list[cProfile.Profile] = []


def _toggle(signum: int, frame: FrameType | None) -> None:
    assert _DIRECTORY is not None
    if not _running:
        profiler = cProfile.Profile()
        profiler.enable()
        _running.append(profiler)
        state = "on"
    else:
        profiler = _running.pop()
        profiler.disable()
        profiler.dump_stats(Path(_DIRECTORY, f"{os.getpid()}.pstats"))
        state = "saved"
    # Straight to the file descriptor: the signal may arrive while a log line is being
    # written to sys.stderr, whose buffer refuses a reentrant write.
    os.write(2, f"bench profile {state} {os.getpid()}\n".encode())


if _DIRECTORY:
    signal.signal(signal.SIGUSR1, _toggle)
