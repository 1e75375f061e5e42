"""`python -m bot` serves Slack; `python -m bot console` and `python -m bot audit` are tools.

Configuration problems end here as one line on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys

from bot.config import ConfigError
from bot.state import StateError

USAGE = """usage: python -m bot [serve [--workers N] |
                     console [--mode agent|ask] [--database NAME] |
                     audit [--since 2024-05-01T00:00|1h|2d] [--json]]"""


def _configure_logging() -> None:
    logging.basicConfig(
        level=os.environ.get("DBAGENT_LOG_LEVEL", "INFO").upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


async def _serve() -> int:
    from bot.config import load_settings
    from bot.slack.server import serve

    await serve(load_settings())
    return 0


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    command = args.pop(0) if args else "serve"
    _configure_logging()
    try:
        if command == "serve":
            from bot.workers import parse_workers, serve_workers

            workers = parse_workers(args)
            return serve_workers(workers) if workers > 1 else asyncio.run(_serve())
        if command == "console":
            from bot.console import console_main

            return asyncio.run(console_main(args))
        if command == "audit":
            from bot.agent.audit_cli import audit_main

            return asyncio.run(audit_main(args))
        if command in ("-h", "--help", "help"):
            print(USAGE)
            return 0
        print(f"dbagent: unknown command {command!r}\n{USAGE}", file=sys.stderr)
        return 2
    except (ConfigError, StateError) as exc:
        print(f"dbagent: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
