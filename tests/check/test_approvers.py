"""A database that may be written with nobody to approve its changes stays an error of
`dbagent check`; production alone needs no approvers."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.check import Mark, run_checks
from bot.config import DatabaseConfig, Settings
from tests.fakes.model_server import FakeModelServer
from tests.fakes.slack_server import FakeSlack

# (environment, the approvers line's mark, reason)
ROWS = [
    ("staging", Mark.FAILED, "a writable database: no change could ever run"),
    ("development", Mark.FAILED, "writable too"),
    ("production", Mark.PASSED, "never written: nobody needs to approve"),
]


@pytest.mark.parametrize(("environment", "mark", "reason"), ROWS, ids=[r[-1] for r in ROWS])
async def test_no_approvers_fails_only_where_changes_could_run(
    mysql_url: str, tmp_path: Path, environment: str, mark: Mark, reason: str
) -> None:
    async with FakeSlack(token="xoxb-check") as slack, FakeModelServer() as model:
        settings = Settings(
            slack_bot_token="xoxb-check",
            slack_signing_secret="secret",
            slack_app_token=None,
            slack_api_url=slack.api_url,
            openai_base_url=model.url,
            openai_api_key="test",
            databases=[DatabaseConfig(name="shop", url=mysql_url, environment=environment)],
            dbagent_state_dir=tmp_path / "state",
            dbagent_config=tmp_path / "none.toml",
        )
        lines = await run_checks(settings)
    [approvers] = [line for line in lines if line.subject == "approvers"]
    assert approvers.mark is mark, reason
