"""Slack: auth.test with the bot token, its scopes against manifest.yml, every approver
resolvable, and the app-level token in Socket Mode (or the signing secret in HTTP mode)."""

from __future__ import annotations

from importlib.resources import files

from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.app import slack_socket_mode
from bot.check.lines import Line, failed, passed, warning
from bot.config import Environment, Settings

SLACK_TIMEOUT_S = 15.0


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
