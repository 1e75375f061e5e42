"""`dbagent check`: is everything the bot needs there, and does it answer?

One line per check — ✓ passed, ! passed with a warning, ✗ failed with the fix — and exit
status 0 only when nothing failed. Checks that do not depend on each other run at once:
each database (flavour and version, lower_case_table_names, the account's privileges), the
model server (a real chat-completions request that must come back with a tool call) and
Slack (auth.test, the token's scopes against manifest.yml, every approver, Socket Mode).
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Sequence
from typing import TextIO

from bot.check.lines import Line, Mark, failed, passed, warning
from bot.check.mcp import mcp_lines
from bot.check.model import model_line
from bot.check.redis import redis_lines
from bot.check.roles import database_and_role_lines
from bot.check.slack import manifest_scopes, read_manifest, slack_lines
from bot.config import ConfigError, Settings, load_settings

__all__ = [
    "Line",
    "Mark",
    "check_main",
    "failed",
    "manifest_scopes",
    "passed",
    "read_manifest",
    "report",
    "run_checks",
    "warning",
]


def configuration_line(settings: Settings) -> Line:
    source = (
        str(settings.dbagent_config)
        if settings.dbagent_config.exists()
        else "the environment (no config file)"
    )
    count = len(settings.databases)
    return passed(
        "configuration",
        f"{source}: {count} database{'s' if count != 1 else ''}, "
        f"{len(settings.approvals.approvers)} approver(s)",
    )


async def state_lines(settings: Settings) -> list[Line]:
    if settings.dbagent_state_url:
        from bot.state import StateError
        from bot.state.redis_db import RedisDb

        try:
            redis_db = await RedisDb.open(settings.dbagent_state_url)
        except StateError as exc:
            return [
                failed(
                    "state",
                    str(exc),
                    "check DBAGENT_STATE_URL (redis://host:6379/0) and that Redis runs",
                )
            ]
        try:
            policy = await redis_db.eviction_policy()
            lines = await redis_lines(redis_db.client, redis_db.where, policy)
        finally:
            await redis_db.close()
        return [*lines, _signing_line(settings)]
    return [state_line(settings)]


def _signing_line(settings: Settings) -> Line:
    from bot.state.seal import KEY_ENV, MIN_KEY_CHARS

    key = settings.dbagent_state_key
    fix = (
        f"set {KEY_ENV} to at least {MIN_KEY_CHARS} random characters (openssl rand -hex "
        "32), the same on every replica: it signs grants, pending approvals and forwarded "
        "Stops in Redis"
    )
    if key is not None and len(key.get_secret_value()) < MIN_KEY_CHARS:
        return failed("state key", f"{KEY_ENV} is shorter than {MIN_KEY_CHARS} characters", fix)
    if key is not None:
        return passed("state key", "grants, pending approvals and forwarded Stops are signed")
    if settings.slack_bot_token is not None and settings.slack_bot_token.get_secret_value():
        return passed(
            "state key",
            "grants, pending approvals and forwarded Stops are signed with a key derived from "
            f"SLACK_BOT_TOKEN (set {KEY_ENV} to rotate it apart from the token)",
        )
    return failed("state key", f"neither {KEY_ENV} nor SLACK_BOT_TOKEN is set", fix)


def state_line(settings: Settings) -> Line:
    directory = settings.dbagent_state_dir.resolve()
    existing = directory
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not os.access(existing, os.W_OK):
        return failed(
            "state",
            f"{directory} cannot be written",
            "set DBAGENT_STATE_DIR to a directory the bot's user may write",
        )
    return passed("state", f"embedded SQLite at {directory}")


async def run_checks(settings: Settings) -> list[Line]:
    """Every check, in a fixed order, run concurrently where they do not depend on each other."""
    database_checks = [database_and_role_lines(db, settings.limits) for db in settings.databases]
    results = await asyncio.gather(*database_checks, model_line(settings), slack_lines(settings))
    lines = [configuration_line(settings), *await state_lines(settings)]
    if not settings.databases:
        lines.append(
            failed(
                "databases",
                "none configured",
                "set DBAGENT_DATABASE_URL=mysql://user:password@host:3306/schema, or add a "
                f"[[databases]] entry to {settings.dbagent_config}",
            )
        )
    for result in results[: len(database_checks)]:
        assert isinstance(result, list)
        lines.extend(result)
    model = results[len(database_checks)]
    assert isinstance(model, Line)
    lines.append(model)
    slack = results[-1]
    assert isinstance(slack, list)
    lines.extend(slack)
    if not any(line.mark is Mark.FAILED and line.subject == "Slack auth.test" for line in slack):
        lines.extend(await mcp_lines(settings))
    return lines


def report(lines: Sequence[Line], out: TextIO) -> int:
    for line in lines:
        out.write(line.render() + "\n")
    failures = sum(line.mark is Mark.FAILED for line in lines)
    warnings = sum(line.mark is Mark.WARNING for line in lines)
    if failures:
        out.write(f"{failures} check(s) failed, {warnings} warning(s)\n")
        return 1
    out.write(f"all checks passed, {warnings} warning(s)\n")
    return 0


async def check_main(argv: Sequence[str], out: TextIO | None = None) -> int:
    stream = out or sys.stdout
    if argv and argv[0] in ("-h", "--help"):
        stream.write(
            "usage: dbagent check\n\nChecks the configuration, every database, the model "
            "server and Slack; exit status 0 only when none fails.\n"
        )
        return 0
    try:
        settings = load_settings()
    except ConfigError as exc:
        return report(
            [
                failed(
                    "configuration",
                    str(exc),
                    "fix the line named, then run dbagent check again",
                )
            ],
            stream,
        )
    return report(await run_checks(settings), stream)
