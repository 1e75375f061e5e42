"""Where the workers of `serve --workers N` write their metrics: PROMETHEUS_MULTIPROC_DIR.

prometheus_client reads the variable when it is first imported, so the supervisor, which
sets it for its workers, uses this module only (never the metrics themselves).
"""

from __future__ import annotations

import os
from pathlib import Path

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


def multiprocess_dir() -> Path | None:
    where = os.environ.get(MULTIPROC_ENV)
    return Path(where) if where else None


def clear_multiprocess_dir(directory: Path) -> None:
    """Forget the samples of a previous run (the workers of this one start from zero)."""
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob("*.db"):
        stale.unlink(missing_ok=True)


def forget_live_gauges(pid: int) -> None:
    """A worker ended: its live gauges (leases held) leave the sums; its counters stay (what
    it counted happened). prometheus_client's mark_process_dead, without loading the library
    in the supervisor."""
    directory = multiprocess_dir()
    if directory is None:
        return
    for stale in directory.glob(f"gauge_live*_{pid}.db"):
        stale.unlink(missing_ok=True)
