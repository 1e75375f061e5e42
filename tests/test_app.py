"""bot/app.py: the parts built in one place, what a configuration lacks, the start-up line."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.agent import Answer, Requester
from bot.app import build_app, running_app, serving_problem, summary
from bot.config import DatabaseConfig, Mode, Settings
from tests.fakes.model_server import FakeModelServer, say

DATABASE = DatabaseConfig(name="shop", url="mysql://agent@db/shop", environment="staging")
PRODUCTION = DatabaseConfig(name="shop-prod", url="mysql://agent@db/shop", environment="production")


def settings(tmp_path: Path, **values: object) -> Settings:
    defaults: dict[str, object] = {"dbagent_state_dir": tmp_path / "state"}
    return Settings(**{**defaults, **values})


PROBLEMS = [
    # (settings beyond the state directory, words of the problem, reason)
    ({}, "no database configured", "a database comes first"),
    ({"databases": [DATABASE]}, "no model configured", "then a model"),
    ({"databases": [DATABASE], "openai_api_key": "sk-x"}, "SLACK_BOT_TOKEN", "then Slack"),
    (
        {"databases": [DATABASE], "openai_base_url": "http://m/v1", "slack_bot_token": "xoxb"},
        "SLACK_SIGNING_SECRET",
        "HTTP mode needs its secret",
    ),
    (
        {
            "databases": [DATABASE],
            "openai_base_url": "http://m/v1",
            "slack_bot_token": "xoxb",
            "slack_app_token": "xapp",
        },
        None,
        "Socket Mode needs no signing secret",
    ),
]


@pytest.mark.parametrize(("values", "words", "reason"), PROBLEMS, ids=[r[-1] for r in PROBLEMS])
def test_what_a_configuration_lacks_is_named_in_the_order_it_is_met(
    tmp_path, values, words, reason
):
    problem = serving_problem(settings(tmp_path, **values))
    if words is None:
        assert problem is None, reason
    else:
        assert problem is not None and words in problem, reason
        assert "\n" not in problem


def test_the_summary_names_databases_modes_approvers_state_and_slack(tmp_path):
    line = summary(
        settings(
            tmp_path,
            databases=[DATABASE, PRODUCTION],
            approvals={"approvers": ["U0A", "S0B"], "environments": {"staging": 2}},
            channels={"C0QA": "ask"},
            dbagent_state_url="redis://:secret-pw@redis:6379/0",
            slack_app_token="xapp-1",
        )
    )
    assert "databases shop (staging), shop-prod (production)" in line
    assert "modes channels agent, DMs ask, 1 channel override(s)" in line
    assert "2 approver(s), production 1, staging 2, development 1 required per change" in line
    assert "state Redis" in line and "secret-pw" not in line
    assert line.endswith("Slack Socket Mode")


async def test_the_parts_answer_a_question_and_close(tmp_path):
    async with FakeModelServer([say("Hello from the model.")]) as model:
        configured = settings(
            tmp_path,
            databases=[DATABASE],
            openai_base_url=model.url,
            openai_model="fake-model",
            limits={"model_max_retries": 0},
        )
        async with running_app(configured) as app:
            outcome = await app.agent.handle_message(
                "T:C:1",
                "hi",
                requester=Requester(user_id="U0ASKER", name="asker", timezone="UTC"),
                mode=Mode.ASK,
            )
        assert isinstance(outcome, Answer) and outcome.text == "Hello from the model."
        assert app.databases.names() == ["shop"]


async def test_the_console_may_narrow_the_databases(tmp_path):
    configured = settings(tmp_path, databases=[DATABASE, PRODUCTION], openai_api_key="sk-x")
    app = await build_app(configured, databases=[PRODUCTION])
    try:
        assert app.databases.names() == ["shop-prod"]
    finally:
        await app.close()
