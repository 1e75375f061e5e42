"""The Slack app manifest and the Procfile ask for what the app uses, and no more."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCOPES = {
    "app_mentions:read",
    "assistant:write",
    "channels:history",
    "channels:read",
    "groups:history",
    "im:history",
    "im:read",
    "im:write",
    "chat:write",
    "files:write",
    "reactions:write",
    "usergroups:read",
    "users:read",
}
EVENTS = {
    "app_home_opened",
    "app_mention",
    "assistant_thread_started",
    "message.channels",
    "message.groups",
    "message.im",
}


def section(text: str, name: str) -> set[str]:
    """The list items under `name:` in the YAML (comments dropped), each listed once."""
    block = re.search(rf"^(\s*){name}:\s*\n((?:\1\s+- .*\n)+)", text, re.MULTILINE)
    assert block, f"{name} is missing"
    items = [line.split("- ", 1)[1].split("#")[0].strip() for line in block.group(2).splitlines()]
    assert len(items) == len(set(items)), f"{name} lists an item twice: {sorted(items)}"
    return set(items)


def test_the_manifest_asks_for_the_scopes_and_events_the_app_uses() -> None:
    manifest = (ROOT / "manifest.yml").read_text()
    assert section(manifest, "bot") == SCOPES
    assert section(manifest, "bot_events") == EVENTS


def test_the_manifest_turns_on_a_bot_user_interactivity_and_socket_mode() -> None:
    manifest = (ROOT / "manifest.yml").read_text()
    assert re.search(r"^\s*bot_user:\s*\n\s+display_name: dbagent", manifest, re.MULTILINE)
    assert re.search(r"interactivity:\s*\n\s+is_enabled: true", manifest)
    assert re.search(r"^\s*socket_mode_enabled: true", manifest, re.MULTILINE)
    assert manifest.count("request_url: https://example.com/slack/events") == 2


def test_the_manifest_turns_on_the_home_tab_and_the_assistant_view() -> None:
    manifest = (ROOT / "manifest.yml").read_text()
    assert re.search(r"^\s*home_tab_enabled: true", manifest, re.MULTILINE)
    assert re.search(r"^\s*assistant_view:.*\n\s+assistant_description: \S", manifest, re.MULTILINE)


def test_the_procfile_has_a_socket_mode_worker_and_an_http_web_process() -> None:
    lines = dict(
        line.split(":", 1) for line in (ROOT / "Procfile").read_text().splitlines() if line
    )
    assert lines["worker"].strip() == "python -m bot"
    assert "python -m bot" in lines["web"] and "SLACK_APP_TOKEN" in lines["web"]
