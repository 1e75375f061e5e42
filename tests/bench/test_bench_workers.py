"""bench/bench_workers.py, run small: two real workers on Redis answer every thread and it
reports; the figures themselves are the benchmark's, not checked here."""

from __future__ import annotations

import asyncio
import os
import re
import sys
from pathlib import Path

from tests.schemas import run_schema

ROOT = Path(__file__).resolve().parents[2]


async def test_two_workers_answer_every_thread_and_report(mysql_url: str, redis_url: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DBAGENT_", "SLACK_"))}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "bench/bench_workers.py", "--workers", "2", "--threads", "4",
        "--model-delay", "0.05", "--url", mysql_url, "--redis-url", redis_url,
        "--schema", run_schema("dbagent_t_bench_workers"),
        cwd=ROOT, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 180)
    report = out.decode()
    # 0 or 1: the ratio met its target or not; 2 (or a traceback) would be a failed run.
    assert process.returncode in (0, 1), err.decode()[-3000:]
    assert "Traceback" not in err.decode(), err.decode()[-3000:]
    header = re.search(r"^\s+floor app\s+1 worker\s+2 workers$", report, re.MULTILINE)
    assert header, report
    ratios = re.search(r"^\s+ratio(\s+[\d.]+x){3}$", report, re.MULTILINE)
    assert ratios, report
    # The bot's CPU per turn against the floor's, measured in the same run (the floor is 1x).
    cpu = re.search(r"^\s+CPU per turn / the floor's\s+1\.00x(\s+[\d.]+x){2}$", report, re.M)
    assert cpu, report
    # Every thread was answered once (else no report): by the floor, then by one worker or
    # the other.
    split = re.search(
        r"^\s+threads answered per worker\s+(\d+)\s+(\d+)\s+(\d+) / (\d+)$", report, re.M
    )
    assert split, report
    assert int(split[1]) == int(split[2]) == 4 and int(split[3]) + int(split[4]) == 4, report
