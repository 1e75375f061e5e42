"""Skills: markdown guides with front matter, in the repository's skills/ directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.agent.skills import SkillError, Skills, parse_skill


def test_the_repository_ships_query_slow_query_and_data_fix() -> None:
    skills = Skills.load()
    assert {"query", "slow-query", "data-fix"} <= set(skills.names())
    assert all(skill.description for skill in skills)


@pytest.mark.parametrize(
    ("name", "must_mention"),
    [
        ("query", ["list_tables", "get_columns", "never guess"]),
        ("slow-query", ["EXPLAIN FORMAT=JSON", "full table scan", "filesort", "temporary"]),
        ("data-fix", ["smallest", "SELECT", "execute_query", "approv"]),
    ],
)
def test_each_guide_teaches_its_workflow(name: str, must_mention: list[str]) -> None:
    skill = Skills.load().get(name)
    assert skill is not None
    body = skill.body.lower()
    for phrase in must_mention:
        assert phrase.lower() in body, phrase


def test_front_matter_gives_name_and_description_and_the_rest_is_the_guide() -> None:
    skill = parse_skill("---\nname: demo\ndescription: 'A demo'\n---\n# Steps\n1. do it\n")
    assert (skill.name, skill.description, skill.body) == ("demo", "A demo", "# Steps\n1. do it")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("# no front matter", "must start with front matter"),
        ("---\nname: x\ndescription: y\n", "not closed"),
        ("---\nname: x\n---\nbody", "needs name and description"),
    ],
)
def test_a_skill_file_without_usable_front_matter_is_named_in_the_error(
    text: str, problem: str
) -> None:
    with pytest.raises(SkillError, match=problem):
        parse_skill(text, "skills/bad.md")


def test_the_skills_directory_can_be_overridden(tmp_path: Path) -> None:
    (tmp_path / "one.md").write_text("---\nname: one\ndescription: first\n---\nbody")
    skills = Skills.load(tmp_path)
    assert skills.names() == ["one"]
    assert skills.get("ONE") is not None
