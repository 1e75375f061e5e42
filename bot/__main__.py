"""`dbagent` (or `python -m bot`): serve Slack, or one of the tools beside it.

Configuration problems end here as one line on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import sys

from bot.config import ConfigError
from bot.observability import logs
from bot.state import StateError

log = logging.getLogger("bot")

USAGE = """usage: dbagent [COMMAND]   (or: python -m bot [COMMAND])

commands:
  serve [--workers N]
                   serve Slack (the default): Socket Mode when SLACK_APP_TOKEN is set,
                   else HTTP on PORT; --workers N runs N processes sharing Redis state
  check            check the configuration, every database, the model server and Slack;
                   one line per check, exit status 0 only when none fails
  console [--mode agent|ask] [--database NAME]
                   the same agent in the terminal, approvals as a y/n prompt
  audit [--since 2024-05-01T00:00|1h|2d] [--json]
                   every statement executed, refused or sent for approval
  mcp              the tools over MCP on stdio, for the [[mcp.clients]] entry whose token
                   is in DBAGENT_MCP_TOKEN (shared state only; changes become Slack cards)
  init             write dbagent.example.toml (every key, commented) to this directory

Configuration: dbagent.toml (DBAGENT_CONFIG), or DBAGENT_DATABASE_URL for one database;
`dbagent init` writes dbagent.example.toml, every key with a comment, to start from.
Operations: GET /health and GET /metrics on PORT; DBAGENT_LOG_FORMAT=json for JSON log
lines; OTEL_EXPORTER_OTLP_ENDPOINT to export traces."""


# The model client's libraries log every HTTP request at INFO: two lines per turn that say
# nothing the bot's own lines do not, and writing them cost 3-5% of a serving worker's CPU
# (bench_workers.py). DBAGENT_LOG_LEVEL=DEBUG shows them again.
PER_REQUEST_LOGGERS = ("httpx", "httpx2", "openai")
YOUNG_COLLECTION_THRESHOLD = 10_000  # allocations between collections of new objects


def _configure_logging(default_level: str = "INFO") -> None:
    logging.basicConfig(
        level=os.environ.get("DBAGENT_LOG_LEVEL", default_level).upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if logs.wants_json():  # DBAGENT_LOG_FORMAT=json: one JSON object per line
        logs.use_json()
    if logging.getLogger().getEffectiveLevel() > logging.DEBUG:
        for name in PER_REQUEST_LOGGERS:
            logging.getLogger(name).setLevel(logging.WARNING)


async def _serve() -> int:
    from bot.app import serving_problem, summary, unreachable_databases
    from bot.config import load_settings

    settings = load_settings()
    problem = serving_problem(settings)
    if problem is not None:
        raise ConfigError(problem)
    log.info("%s", summary(settings))
    unreachable = await unreachable_databases(settings)
    if unreachable and len(unreachable) == len(settings.databases):
        name, reason = next(iter(unreachable.items()))
        raise ConfigError(
            f"no configured database is reachable ({name}: {reason}); run dbagent check"
        )
    for name, reason in unreachable.items():
        log.warning("database %s is unreachable for now: %s", name, reason)
    from bot.slack.server import serve  # Slack's libraries, only once there is work for them

    # What is loaded by now (modules, parsers, models) lives as long as the process. Out of
    # the collector's sight, a full collection no longer walks it: about 40 ms, which every
    # turn in progress would wait for, at a moment nobody chooses.
    gc.collect()
    gc.freeze()
    # At the default threshold (700 new containers) the young generation was collected about
    # once per turn. Measured over bench_workers.py's rounds: 0.18 ms of collection per turn
    # at the default, 0.05-0.08 ms at this one (fewer, longer collections: about 1.5 ms each).
    gc.set_threshold(YOUNG_COLLECTION_THRESHOLD)
    await serve(settings)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    command = args.pop(0) if args else "serve"
    if command in ("-h", "--help", "help"):
        print(USAGE)
        return 0
    # The check's own lines are its output; the libraries' INFO lines would bury them.
    _configure_logging("WARNING" if command == "check" else "INFO")
    try:
        if command == "serve":
            from bot.workers import parse_workers, serve_workers

            workers = parse_workers(args)
            return serve_workers(workers) if workers > 1 else asyncio.run(_serve())
        if command == "check":
            from bot.check import check_main

            return asyncio.run(check_main(args))
        if command == "console":
            from bot.console import console_main

            return asyncio.run(console_main(args))
        if command == "mcp":
            from bot.mcp.stdio import mcp_main

            return asyncio.run(mcp_main(args))
        if command == "init":
            from bot.init import init_main

            return init_main(args)
        if command == "audit":
            from bot.agent.audit_cli import audit_main

            return asyncio.run(audit_main(args))
        print(f"dbagent: unknown command {command!r}\n{USAGE}", file=sys.stderr)
        return 2
    except (ConfigError, StateError) as exc:
        print(f"dbagent: {exc}", file=sys.stderr)
        if isinstance(exc, StateError):
            from bot.workers import STORE_UNREACHABLE, WORKER_ENV

            # A worker of `serve --workers N` started while the store is out of reach: its
            # parent starts it again later (status 2, a configuration error, stops them all).
            return STORE_UNREACHABLE if WORKER_ENV in os.environ else 2
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
