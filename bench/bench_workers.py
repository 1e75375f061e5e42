"""Benchmark: `python -m bot serve --workers N` on Redis under 100 concurrent threads.

    .venv/bin/python bench/bench_workers.py [--workers 2] [--threads 100] [--model-delay 0.2]
                                            [--tool execute_query|list_tables] [--profile]

The turns of bench_slack.py (one tool call, then the answer: two model calls per turn), served
by the bot itself as real processes: `python -m bot serve --workers 1`, then `--workers N`, in
the same run, each with its state under a key prefix of its own in Redis (deleted at the end).
Signed events go to the port the workers share (SO_REUSEPORT), each on a new connection, so
the kernel spreads them as it would a load balancer's; the fake Slack Web API and the fake
model server run in a child process. Each thread has a channel of its own: the bot paces
posts per channel as Slack requires, and this measures the bot, not Slack's rate.

The floor is measured first, in the same run and the same way: bench/floor_bot.py, a minimal
Bolt app in one process making the same Slack and model calls (the same two streamed model
requests, the query on MariaDB, the CSV shared in the thread, the answer posted) with no
state store, guard or history. The bot's CPU per turn is printed as a multiple of the
floor's (target: ≤ 1.3×).

For the floor and each worker count, after warm-up rounds of 1, 10 and --threads threads: the
wall time of one thread (median of 5) and of --threads concurrent threads, from the events
being sent to each thread's last Slack call; their ratio (target: ≤ 1.5× with N workers); when the
threads' first and second model calls reached the model (from the first event sent: how long
the burst held each call back); the CPU per turn of all the bot's processes (the scheduler's
count, /proc/PID/task/*/schedstat) and how often they were woken; and how the threads were
split between the workers (by the process that answered each, from its connections to
the fake Slack). Every thread must get exactly one answer (and its result file, with
execute_query), or the run fails.

The events are signed and written out as HTTP requests before the clock starts, and sent
by asyncio's streams (Slack does that work on its own servers); the fakes and this process
collect their garbage only between rounds: a collection in the fakes took 50-90 ms by the
end of a run, and one falling inside a round made it look that much slower. The machine is
shared (the fakes, this process sending the events, anything else running): the CPU of the
fakes and of this process over the concurrent round, and how many cores were busy in all,
are printed beside the bot's.

--profile: each worker runs cProfile over the concurrent round (bench/profile_hook, put on the
workers' PYTHONPATH; the bot knows nothing of it) and its CPU is printed by part, as in
bench_slack.py; BENCH_PSTATS=tottime and BENCH_CALLERS=name print more, as there.

Exit status 0 when the N-worker ratio meets the target, 1 when it does not, 2 when a thread
went unanswered or the bot failed to start or stop. `--url` (or DBAGENT_TEST_MYSQL_URL) names
the MariaDB server, `--redis-url` (or DBAGENT_TEST_REDIS_URL) the Redis server.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pstats
import signal
import statistics
import sys
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `bot` and `tests` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_slack import DEFAULT_URL, SINGLE_RUNS, cpu_by_group, percentile, prepare_schema
from bench.worker_bot import CpuSample, Round, ServedBot, bot_environment
from bench.worker_fakes import Fakes
from tests.redis_keys import forget_keys

DEFAULT_REDIS_URL = os.environ.get("DBAGENT_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
SCHEMA = "dbagent_bench_workers"
TARGET = 1.5
CPU_TARGET = 1.3  # CPU per turn, against the floor's


@dataclass
class Result:
    workers: int  # 0: the floor (bench/floor_bot.py)
    single: float  # median wall time of one thread
    many: Round  # the concurrent round
    cpu: CpuSample  # over the concurrent round
    bot: list[int]  # the bot's processes (the supervisor, when there is one, first)
    pids: list[int]  # its workers
    besides: tuple[int, int]  # the fakes' process, and this one (the events' client)
    profile: list[tuple[str, float, float]]  # --profile: the round's CPU by part, and share


async def measure(
    workers: int, threads: int, env: dict[str, str], fakes: Fakes, profile_dir: Path | None
) -> Result:
    bot = ServedBot(max(workers, 1), env, fakes, floor=workers == 0)
    await bot.start()
    profile: list[tuple[str, float, float]] = []
    try:
        # Every pool (events, Slack, model, database, Redis) then holds the connections the
        # measured round needs, as a serving bot's do.
        for width in (1, min(10, threads), threads):
            await bot.run(width, "warm-up")
        singles = [(await bot.run(1, f"single {i}")).wall for i in range(SINGLE_RUNS)]
        processes = list(dict.fromkeys([bot.process.pid, *bot.pids]))
        besides = (fakes.pid, os.getpid())  # on the same cores
        before = CpuSample.take([*processes, *besides])
        if profile_dir is not None and workers:
            await bot.toggle_profiles("on")
        after: list[CpuSample] = []
        many = await bot.run(
            threads, "concurrent", lambda: after.append(CpuSample.take([*processes, *besides]))
        )
        cpu = after[0].since(before)
        if profile_dir is not None and workers:
            await bot.toggle_profiles("saved")
            files = [str(profile_dir / f"{pid}.pstats") for pid in bot.pids]
            profile = cpu_by_group(*files)
            if os.environ.get("BENCH_PSTATS"):  # the top functions too, sorted by this key
                pstats.Stats(*files).sort_stats(os.environ["BENCH_PSTATS"]).print_stats(45)
            if os.environ.get("BENCH_CALLERS"):  # who calls these?
                pstats.Stats(*files).print_callers(os.environ["BENCH_CALLERS"])
    finally:
        await bot.stop()
    return Result(
        workers, statistics.median(singles), many, cpu, processes, bot.pids, besides, profile
    )


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=100)
    parser.add_argument("--model-delay", type=float, default=0.2)
    parser.add_argument("--tool", choices=["execute_query", "list_tables"], default="execute_query")
    parser.add_argument("--url", default=DEFAULT_URL)
    parser.add_argument("--redis-url", default=DEFAULT_REDIS_URL)
    parser.add_argument("--schema", default=SCHEMA, help="the schema the turns query (reset)")
    parser.add_argument("--profile", action="store_true", help="print where the workers' CPU goes")
    args = parser.parse_args(argv)
    if args.workers < 2:
        parser.error("--workers must be 2 or more (1 worker is measured as the baseline)")
    # SIGTERM as Ctrl-C: stop the bot and delete this run's keys on the way out.
    main_task = asyncio.current_task()
    assert main_task is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, main_task.cancel)

    database_url = await prepare_schema(args.url, args.schema)
    results: list[Result] = []
    with tempfile.TemporaryDirectory() as scratch, Fakes(args.tool, args.model_delay) as fakes:
        for workers in (0, 1, args.workers):  # 0: the floor
            prefix = f"dbagent-bench-workers:{uuid.uuid4().hex[:8]}:"
            separator = "&" if "?" in args.redis_url else "?"
            state_url = f"{args.redis_url}{separator}prefix={prefix}"
            profile_dir = Path(scratch, f"profile-{workers}") if args.profile else None
            if profile_dir is not None:
                profile_dir.mkdir()
            env = bot_environment(Path(scratch), database_url, state_url, fakes, profile_dir)
            try:
                results.append(await measure(workers, args.threads, env, fakes, profile_dir))
            finally:
                await forget_keys(args.redis_url, prefix)
    print_report(args, results)
    return 0 if results[-1].many.wall / results[-1].single <= TARGET else 1


def print_report(args: argparse.Namespace, results: list[Result]) -> None:
    print(
        f"dbagent workers benchmark: {args.threads} threads (a channel each), tool {args.tool}, "
        f"model {args.model_delay * 1000:.0f} ms per call, 2 model calls per turn, "
        f"`python -m bot serve --workers N`, state in Redis"
    )
    print(
        f"  load average {' '.join(f'{v:.2f}' for v in os.getloadavg())} on {os.cpu_count()} cores"
    )

    def row(label: str, cells: list[str]) -> None:
        print(f"  {label:<30}" + "".join(f"{cell:>16}" for cell in cells))

    def seconds(r: Result, pids: list[int]) -> str:
        return " / ".join(f"{r.cpu.by_pid[pid]:.2f}" for pid in pids) + " s"

    row("", [_label(r.workers) for r in results])
    row("Slack API calls per turn", [f"{r.many.api_calls / args.threads:.1f}" for r in results])
    row(f"single thread (median of {SINGLE_RUNS})", [f"{r.single * 1000:.1f} ms" for r in results])
    row(f"{args.threads} concurrent threads", [f"{r.many.wall * 1000:.1f} ms" for r in results])
    row("ratio", [f"{r.many.wall / r.single:.2f}x" for r in results])
    turns = [[t * 1000 for t in r.many.turns] for r in results]
    row("turn time, median", [f"{statistics.median(t):.1f} ms" for t in turns])
    row("turn time, p99", [f"{percentile(t, 0.99):.1f} ms" for t in turns])
    # When the threads' model calls reached the model: how long the bot took to send each
    # call of all the threads, which is what a burst waits for.
    for call in range(max(len(r.many.model_calls) for r in results)):
        row(
            f"model call {call + 1} sent, first / last",
            [
                _spread(r.many.model_calls[call] if call < len(r.many.model_calls) else [])
                for r in results
            ],
        )
    row(
        "CPU per turn, all processes",
        [f"{sum(r.cpu.by_pid[p] for p in r.bot) / args.threads * 1000:.1f} ms" for r in results],
    )
    floor = results[0]  # measured first, in the same run
    floor_cpu = sum(floor.cpu.by_pid[p] for p in floor.bot)
    row(
        "CPU per turn / the floor's",
        [f"{sum(r.cpu.by_pid[p] for p in r.bot) / floor_cpu:.2f}x" for r in results],
    )
    row(
        "wakeups per turn, all processes",
        [f"{sum(r.cpu.wakeups[p] for p in r.bot) / args.threads:.0f}" for r in results],
    )
    row(
        "threads answered per worker",
        [" / ".join(str(r.many.owners[p]) for p in r.pids) for r in results],
    )
    unattributed = sum(r.many.owners[0] for r in results)
    if unattributed:
        print(f"  ({unattributed} threads could not be attributed to a worker)")
    row("CPU per worker", [seconds(r, r.pids) for r in results])
    row("CPU of the fakes / the client", [seconds(r, list(r.besides)) for r in results])
    row(
        "cores busy over the round",
        [f"{r.cpu.cores_busy:.2f} of {os.cpu_count()}" for r in results],
    )
    print(
        f"  target: ratio <= {TARGET}x with {args.workers} workers (every thread answered once); "
        f"CPU per turn <= {CPU_TARGET}x the floor's (a minimal Bolt app making the same Slack "
        "and model calls, bench/floor_bot.py)"
    )
    for result in results:
        if result.profile:
            print(f"  where the CPU of {result.workers} worker(s) went (profiled, so slower):")
            for group, spent, share in result.profile:
                turn_ms = spent / args.threads * 1000
                print(f"    {group:<44} {turn_ms:6.1f} ms/turn  {share:5.1%}")


def _label(workers: int) -> str:
    return "floor app" if workers == 0 else f"{workers} worker{'s' if workers > 1 else ''}"


def _spread(times: list[float]) -> str:
    return f"{times[0] * 1000:.0f} / {times[-1] * 1000:.0f} ms" if times else "-"


if __name__ == "__main__":
    try:
        sys.exit(asyncio.run(main()))
    except RuntimeError as exc:  # a turn not answered, the bot not starting or not stopping
        print(f"bench_workers: {exc}", file=sys.stderr)
        sys.exit(2)
    except (KeyboardInterrupt, asyncio.CancelledError):
        print("bench_workers: stopped", file=sys.stderr)
        sys.exit(130)
