"""A full disk for real: a small tmpfs (root only; skipped loudly elsewhere), and filling it."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def small_disk(mount_point: Path, size: str = "2m") -> Iterator[Path]:
    mount_point.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"!!! SKIPPED: cannot mount a small tmpfs ({done.stderr.strip()})")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def fill(disk: Path) -> Path:
    ballast = disk / "ballast"
    descriptor = os.open(ballast, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        with contextlib.suppress(OSError):
            while True:
                os.write(descriptor, b"\0" * 4096)
    finally:
        os.close(descriptor)
    return ballast
