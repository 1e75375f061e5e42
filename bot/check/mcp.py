"""MCP clients (`[mcp]`): the approval channel exists and the bot is in it, and every
client's Slack user exists. Nothing to check (no line) when no client is configured."""

from __future__ import annotations

from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.check.lines import Line, Mark, failed, passed, warning
from bot.config import Settings

SLACK_TIMEOUT_S = 15
SLACK_ERRORS = (SlackClientError, OSError, TimeoutError)


async def mcp_lines(settings: Settings) -> list[Line]:
    mcp = settings.mcp
    token = settings.slack_bot_token.get_secret_value() if settings.slack_bot_token else ""
    if not mcp.enabled or mcp.approval_channel is None or not token:
        return []  # no clients; or no token, which the Slack check names
    base_url = settings.slack_api_url or AsyncWebClient.BASE_URL
    client = AsyncWebClient(
        token=token, base_url=base_url.rstrip("/") + "/", timeout=SLACK_TIMEOUT_S
    )
    lines = [await _channel_line(client, mcp.approval_channel)]
    for entry in mcp.clients:
        try:
            await client.users_info(user=entry.user)
        except SlackApiError as exc:
            lines.append(
                failed(
                    f"MCP client {entry.name}",
                    f"its user {entry.user} is unknown to Slack ({exc.response.get('error')})",
                    "set user to the member ID of the person it acts for (⋮ → Copy member ID)",
                )
            )
        except SLACK_ERRORS as exc:
            lines.append(
                failed(f"MCP client {entry.name}", f"Slack did not answer ({exc})", "try again")
            )
    if all(line.mark is Mark.PASSED for line in lines):
        where = f"/mcp on port {settings.port}"
        stdio = "" if settings.dbagent_state_url else "; dbagent mcp (stdio) needs Redis state"
        lines.append(passed("MCP clients", f"{len(mcp.clients)} configured, at {where}{stdio}"))
    return lines


async def _channel_line(client: AsyncWebClient, channel: str) -> Line:
    subject = "MCP approval channel"
    try:
        info = (await client.conversations_info(channel=channel)).get("channel") or {}
    except SlackApiError as exc:
        return failed(
            subject,
            f"{channel}: Slack says {exc.response.get('error')}",
            "set [mcp] approval_channel to the channel's ID (C…) and invite the bot to it",
        )
    except SLACK_ERRORS as exc:
        return failed(subject, f"Slack did not answer ({exc})", "try again")
    if info.get("is_member") is False:
        return warning(
            subject,
            f"the bot is not a member of {channel}",
            "invite it (/invite @dbagent): cards for MCP clients' changes are posted there",
        )
    return passed(subject, f"{channel} ({info.get('name') or 'found'})")
