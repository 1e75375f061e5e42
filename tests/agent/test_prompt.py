"""The system prompt, built in one place."""

from __future__ import annotations

from bot.agent.outcomes import Requester
from bot.agent.prompt import build_system_prompt
from bot.agent.skills import Skills
from bot.config import DatabaseConfig, Mode

DATABASES = [
    DatabaseConfig(
        name="shop-prod",
        url="mysql://u@db:3306/shop",
        environment="production",
        description="Live orders",
    ),
    DatabaseConfig(name="shop-staging", url="mysql://u@db:3306/shop", environment="staging"),
]
REQUESTER = Requester(user_id="U0ADA", name="Ada", timezone="Asia/Tokyo")


def prompt(mode: Mode) -> str:
    return build_system_prompt(
        databases=DATABASES, mode=mode, requester=REQUESTER, skills=Skills.load()
    )


def test_the_prompt_names_every_database_with_its_environment_and_description() -> None:
    text = prompt(Mode.AGENT)
    assert "- shop-prod (production) — Live orders" in text
    assert "- shop-staging (staging)" in text


def test_the_prompt_names_the_requester_and_their_time_zone() -> None:
    assert "Ada (U0ADA), whose time zone is Asia/Tokyo" in prompt(Mode.AGENT)


def test_the_prompt_lists_the_skills() -> None:
    text = prompt(Mode.AGENT)
    for name in ("query", "slow-query", "data-fix"):
        assert f"- {name}: " in text


def test_the_rules_teach_look_before_you_leap_and_honest_changes() -> None:
    text = prompt(Mode.AGENT)
    assert "Never guess a table or column name" in text
    assert "Show the SQL you ran" in text
    assert '"truncated": true' in text
    assert "goes through execute_query" in text
    assert "Do not describe a change as done until a tool result" in text
    assert "Production databases are never written" in text


def test_ask_mode_says_nothing_executes_and_sql_goes_in_code_blocks() -> None:
    text = prompt(Mode.ASK)
    assert "Mode: ask" in text
    assert "nothing is executed" in text
    assert "```sql" in text
    assert "Mode: agent" not in text


def test_the_prompt_teaches_reads_the_safety_check_can_prove_read_only() -> None:
    text = prompt(Mode.AGENT)
    assert "COUNT(*), not COUNT (*)" in text
    assert "never quote function names" in text
    assert "ask_user" in text
