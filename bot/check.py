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
import time
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from importlib.resources import files
from typing import TextIO

from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.app import model_configured, slack_socket_mode
from bot.config import ConfigError, DatabaseConfig, Environment, Limits, Settings, load_settings
from bot.sql.grants import (
    SERVER_PRIVILEGES,
    SHOW_GRANTS,
    WRITE_PRIVILEGES,
    Grants,
    read_grants,
)

SLACK_TIMEOUT_S = 15.0
MODEL_TIMEOUT_S = 60.0
SERVER_FACTS = "SELECT VERSION(), @@version_comment, @@lower_case_table_names"
PROBE_TOOL_NAME = "report_status"
PROBE_TOOL = {
    "type": "function",
    "function": {
        "name": PROBE_TOOL_NAME,
        "description": "Report that tool calling works. Always call this tool.",
        "parameters": {
            "type": "object",
            "properties": {"status": {"type": "string", "enum": ["ok"]}},
            "required": ["status"],
        },
    },
}
PROBE_MESSAGES = [
    {
        "role": "system",
        "content": "You are checking that tool calling works. Call the report_status tool "
        "with status ok. Do not answer in text.",
    },
    {"role": "user", "content": "Call report_status now."},
]


class Mark(StrEnum):
    PASSED = "✓"
    WARNING = "!"
    FAILED = "✗"


@dataclass(frozen=True, slots=True)
class Line:
    mark: Mark
    subject: str
    detail: str
    fix: str = ""

    def render(self) -> str:
        text = f"{self.mark} {self.subject}: {self.detail}"
        return f"{text} — fix: {self.fix}" if self.fix else text


def passed(subject: str, detail: str) -> Line:
    return Line(Mark.PASSED, subject, detail)


def warning(subject: str, detail: str, fix: str) -> Line:
    return Line(Mark.WARNING, subject, detail, fix)


def failed(subject: str, detail: str, fix: str) -> Line:
    return Line(Mark.FAILED, subject, detail, fix)


# -- configuration ----------------------------------------------------------------------------
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


def state_line(settings: Settings) -> Line:
    if settings.dbagent_state_url:
        return passed("state", "Redis (DBAGENT_STATE_URL)")
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


# -- databases --------------------------------------------------------------------------------
async def database_lines(config: DatabaseConfig, limits: Limits) -> list[Line]:
    from bot.db import Database, DbError  # the data layer, only when a check uses it

    subject = f"database {config.name} ({config.environment.value})"
    targets = [("", config)]
    if config.read_url is not None:
        replica = config.model_copy(update={"url": config.read_url, "read_url": None})
        targets.append((" replica", replica))
    lines: list[Line] = []
    for suffix, target in targets:
        database = Database(target, limits)
        try:
            execution = await database.execute(
                [SERVER_FACTS, SHOW_GRANTS], read_only=True, limit=200
            )
        except DbError as exc:
            lines.append(
                failed(
                    subject + suffix,
                    exc.message,
                    "check its url in the config (user, password, host, port, schema) and "
                    "that the server is reachable from here",
                )
            )
            continue
        finally:
            await database.close()
        facts, grants_result = (outcome.result for outcome in execution.outcomes)
        assert facts is not None and grants_result is not None
        version, comment, lower_case = facts.rows[0]
        flavour = "MariaDB" if "mariadb" in f"{version} {comment}".lower() else "MySQL"
        grants = read_grants([str(row[0]) for row in grants_result.rows])
        fold_case = str(lower_case) != "0"
        schema = target.schema_name or ""
        held = sorted(grants.anywhere_in(schema, fold_case=fold_case))
        lines.append(
            passed(
                subject + suffix,
                f"{flavour} {version}, lower_case_table_names={lower_case}, "
                f"privileges on {schema}: {_named(frozenset(held)) or 'none'}",
            )
        )
        lines.extend(
            _privilege_warnings(subject + suffix, target, grants, schema, fold_case=fold_case)
        )
    return lines


def _privilege_warnings(
    subject: str, config: DatabaseConfig, grants: Grants, schema: str, *, fold_case: bool
) -> list[Line]:
    account = f"'{config.target.user}'@'<host>'"
    warnings: list[Line] = []
    risky = _named(grants.server_wide() & SERVER_PRIVILEGES)
    if risky:
        warnings.append(
            warning(
                subject,
                f"the account holds {risky} on the whole server, which the bot never needs "
                "(read-only sessions do not stop administrative statements)",
                f"give the bot its own account with only what it needs, or REVOKE {risky} "
                f"ON *.* FROM {account}",
            )
        )
    if config.environment is Environment.PRODUCTION:
        writes = _named(grants.anywhere_in(schema, fold_case=fold_case) & WRITE_PRIVILEGES)
        if writes:
            warnings.append(
                warning(
                    subject,
                    f"the account may write on a production database ({writes}); dbagent "
                    "refuses every write there, and the account should not be able to either",
                    f"use a read-only account: GRANT SELECT, SHOW VIEW ON `{schema}`.* only",
                )
            )
    on_schema = grants.held_on(schema, fold_case=fold_case)
    if not on_schema & {"SELECT", "ALL"}:
        some_tables = "SELECT" in grants.anywhere_in(schema, fold_case=fold_case)
        warnings.append(
            warning(
                subject,
                "the account has SELECT on only some tables"
                if some_tables
                else f"the account has no SELECT on {schema}; the bot cannot read it",
                f"GRANT SELECT, SHOW VIEW ON `{schema}`.* TO {account}",
            )
        )
    if grants.roles:
        warnings.append(
            warning(
                subject,
                f"privileges granted through roles ({', '.join(grants.roles)}) are not "
                "shown or checked",
                "grant the bot's privileges to its account directly, or check the roles by hand",
            )
        )
    return warnings


def _named(privileges: frozenset[str]) -> str:
    """Privileges as the server names them, ALL as ALL PRIVILEGES (which includes SUPER…)."""
    names = ["ALL PRIVILEGES" if name == "ALL" else name for name in sorted(privileges)]
    return ", ".join(names)


# -- the model --------------------------------------------------------------------------------
async def model_line(settings: Settings) -> Line:
    subject = f"model {settings.openai_model}"
    if not model_configured(settings):
        return failed(
            subject,
            "no model server configured",
            "set OPENAI_BASE_URL (any OpenAI-compatible server) and OPENAI_MODEL, or "
            "OPENAI_API_KEY for OpenAI's own",
        )
    from bot.agent.model import ModelError, build_model_client

    limits = settings.limits.model_copy(
        update={
            "model_max_retries": min(1, settings.limits.model_max_retries),
            "model_timeout_s": min(MODEL_TIMEOUT_S, settings.limits.model_timeout_s),
        }
    )
    client = build_model_client(settings.model_copy(update={"limits": limits}))
    where = settings.openai_base_url or "OpenAI"
    started = time.perf_counter()
    try:
        turn = await client.complete(PROBE_MESSAGES, [PROBE_TOOL])
    except ModelError as exc:
        return failed(
            subject,
            str(exc),
            "check OPENAI_BASE_URL, OPENAI_MODEL and OPENAI_API_KEY, and that the server runs",
        )
    finally:
        await client.close()
    seconds = time.perf_counter() - started
    if any(call.name == PROBE_TOOL_NAME for call in turn.tool_calls):
        return passed(subject, f"{where} answered with a tool call in {seconds:.1f} s")
    answered = "with a call of another tool" if turn.tool_calls else "in text, without a tool call"
    return failed(
        subject,
        f"{where} answered {answered}; the bot needs tool (function) calling",
        "use a model that supports tool calling, and enable it on the server "
        "(vLLM: --enable-auto-tool-choice --tool-call-parser …; llama.cpp: --jinja)",
    )


# -- Slack ------------------------------------------------------------------------------------
def manifest_scopes(text: str) -> list[str]:
    """The bot scopes listed under oauth_config → scopes → bot in manifest.yml (a reader for
    that one list, so the check needs no YAML library)."""
    path: list[tuple[int, str]] = []
    scopes: list[str] = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].rstrip()
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        content = line.strip()
        while path and path[-1][0] >= indent:
            path.pop()
        if content.startswith("- "):
            if [key for _, key in path] == ["oauth_config", "scopes", "bot"]:
                scopes.append(content[2:].strip().strip("\"'"))
            continue
        if content.endswith(":"):
            path.append((indent, content[:-1].strip()))
    return scopes


def read_manifest() -> str | None:
    try:
        return (files("bot") / "manifest.yml").read_text(encoding="utf-8")
    except OSError:
        return None


async def slack_lines(settings: Settings) -> list[Line]:
    token = settings.slack_bot_token.get_secret_value() if settings.slack_bot_token else ""
    if not token:
        return [
            failed(
                "Slack",
                "SLACK_BOT_TOKEN is not set",
                "copy the Bot User OAuth Token (xoxb-…) from the Slack app's OAuth & "
                "Permissions page into SLACK_BOT_TOKEN",
            )
        ]
    base_url = settings.slack_api_url or AsyncWebClient.BASE_URL
    if not base_url.endswith("/"):
        base_url += "/"
    client = AsyncWebClient(token=token, base_url=base_url, timeout=int(SLACK_TIMEOUT_S))
    try:
        identity = await client.auth_test()
    except SlackApiError as exc:
        return [
            failed(
                "Slack auth.test",
                f"Slack refused SLACK_BOT_TOKEN ({exc.response.get('error')})",
                "copy the current Bot User OAuth Token (xoxb-…) into SLACK_BOT_TOKEN; "
                "reinstall the app if it was revoked",
            )
        ]
    except (SlackClientError, OSError, TimeoutError) as exc:
        return [
            failed(
                "Slack auth.test",
                f"cannot reach Slack at {base_url} ({type(exc).__name__}: {exc})",
                "check the network (or SLACK_API_URL)",
            )
        ]
    lines = [
        passed(
            "Slack auth.test",
            f"signed in as {identity.get('user')} to {identity.get('team')}",
        ),
        _scopes_line(identity.headers),
    ]
    lines.extend(await _approver_lines(client, settings))
    lines.append(await _mode_line(settings, base_url))
    return lines


def _scopes_line(headers: dict[str, object]) -> Line:
    granted_text = next(
        (str(value) for key, value in headers.items() if key.lower() == "x-oauth-scopes"), None
    )
    manifest = read_manifest()
    if manifest is None:
        return warning(
            "Slack scopes", "manifest.yml is not installed with the bot", "reinstall dbagent"
        )
    wanted = manifest_scopes(manifest)
    if granted_text is None:
        return warning(
            "Slack scopes",
            "Slack did not say which scopes the token has",
            f"check by hand that the app has: {', '.join(wanted)}",
        )
    granted = {scope.strip() for scope in granted_text.split(",") if scope.strip()}
    missing = [scope for scope in wanted if scope not in granted]
    if missing:
        return failed(
            "Slack scopes",
            f"the token lacks {', '.join(missing)} (manifest.yml asks for them)",
            "add them under OAuth & Permissions → Bot Token Scopes (or paste manifest.yml "
            "again), then reinstall the app to the workspace",
        )
    return passed("Slack scopes", f"all {len(wanted)} scopes of manifest.yml granted")


async def _approver_lines(client: AsyncWebClient, settings: Settings) -> list[Line]:
    approvers = settings.approvals.approvers
    if not approvers:
        if all(db.environment is Environment.PRODUCTION for db in settings.databases):
            return [passed("approvers", "none configured, and none needed (production only)")]
        return [
            failed(
                "approvers",
                "none configured, so no change can ever be approved",
                "list Slack user IDs (U…) or user-group IDs (S…) in [approvals] approvers",
            )
        ]
    problems: list[Line] = []
    people = 0
    for approver in approvers:
        try:
            if approver.startswith("S"):
                members = (await client.usergroups_users_list(usergroup=approver)).get("users")
                people += len(members or [])
            else:
                await client.users_info(user=approver)
                people += 1
        except SlackApiError as exc:
            problems.append(
                failed(
                    f"approver {approver}",
                    f"Slack cannot resolve it ({exc.response.get('error')})",
                    "use the ID from the person's profile (⋮ → Copy member ID) or the user "
                    "group's ID (S…), and check the usergroups:read and users:read scopes",
                )
            )
        except (SlackClientError, OSError, TimeoutError) as exc:
            problems.append(
                failed(f"approver {approver}", f"Slack did not answer ({exc})", "try again")
            )
    if problems:
        return problems
    return [passed("approvers", f"{len(approvers)} configured, {people} person(s) resolvable")]


async def _mode_line(settings: Settings, base_url: str) -> Line:
    if not slack_socket_mode(settings):
        secret = settings.slack_signing_secret
        if secret is None or not secret.get_secret_value():
            return failed(
                "Slack HTTP mode",
                "SLACK_SIGNING_SECRET is not set",
                "copy Basic Information → Signing Secret into SLACK_SIGNING_SECRET, or set "
                "SLACK_APP_TOKEN (xapp-…) for Socket Mode",
            )
        return passed(
            "Slack HTTP mode",
            f"signing secret set; events expected on port {settings.port} at /slack/events",
        )
    assert settings.slack_app_token is not None
    app_client = AsyncWebClient(
        token=settings.slack_app_token.get_secret_value(),
        base_url=base_url,
        timeout=int(SLACK_TIMEOUT_S),
    )
    try:
        await app_client.apps_connections_open(
            app_token=settings.slack_app_token.get_secret_value()
        )
    except SlackApiError as exc:
        return failed(
            "Slack Socket Mode",
            f"Slack refused SLACK_APP_TOKEN ({exc.response.get('error')})",
            "generate an app-level token (xapp-…) with the connections:write scope under "
            "Basic Information → App-Level Tokens, and turn Socket Mode on",
        )
    except (SlackClientError, OSError, TimeoutError) as exc:
        return failed("Slack Socket Mode", f"cannot reach Slack ({exc})", "check the network")
    return passed("Slack Socket Mode", "SLACK_APP_TOKEN opens a connection")


# -- running them -----------------------------------------------------------------------------
async def run_checks(settings: Settings) -> list[Line]:
    """Every check, in a fixed order, run concurrently where they do not depend on each other."""
    database_checks = [database_lines(db, settings.limits) for db in settings.databases]
    results = await asyncio.gather(*database_checks, model_line(settings), slack_lines(settings))
    lines = [configuration_line(settings), state_line(settings)]
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
