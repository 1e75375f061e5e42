"""Skills: markdown workflow guides in skills/*.md, loaded by the model on demand (get_skill).

Each file starts with front matter:

    ---
    name: slow-query
    description: Read EXPLAIN FORMAT=JSON and propose a fix
    ---

The prompt lists names and descriptions only; the guide itself enters the conversation when
the model asks for it, which keeps every prompt short.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

# Package data (a link to the top-level skills/ in a checkout), so wheels carry the guides.
DEFAULT_DIRECTORY = Path(str(files("bot") / "skills"))


class SkillError(Exception):
    """A skill file without usable front matter; the message names the file."""


@dataclass(frozen=True, slots=True)
class Skill:
    name: str
    description: str
    body: str


def parse_skill(text: str, source: str = "<skill>") -> Skill:
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise SkillError(f"{source}: must start with front matter (---)")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise SkillError(f"{source}: front matter is not closed (---)") from None
    fields: dict[str, str] = {}
    for line in lines[1:end]:
        key, sep, value = line.partition(":")
        if sep:
            fields[key.strip().lower()] = value.strip().strip("\"'")
    if not fields.get("name") or not fields.get("description"):
        raise SkillError(f"{source}: front matter needs name and description")
    body = "\n".join(lines[end + 1 :]).strip()
    return Skill(name=fields["name"], description=fields["description"], body=body)


class Skills:
    def __init__(self, skills: Sequence[Skill] = ()) -> None:
        self._skills = {skill.name.lower(): skill for skill in skills}

    @classmethod
    def load(cls, directory: Path | str | None = None) -> Skills:
        """Read every *.md of the directory (the repository's skills/ by default). Called
        once at start, before the event loop is busy."""
        folder = Path(directory) if directory is not None else DEFAULT_DIRECTORY
        if not folder.is_dir():
            raise SkillError(f"skills directory {folder} does not exist")
        paths = sorted(folder.glob("*.md"))
        return cls([parse_skill(path.read_text("utf-8"), str(path)) for path in paths])

    def names(self) -> list[str]:
        return [skill.name for skill in self._skills.values()]

    def get(self, name: str) -> Skill | None:
        return self._skills.get(name.strip().lower())

    def __iter__(self) -> Iterator[Skill]:
        return iter(self._skills.values())

    def __len__(self) -> int:
        return len(self._skills)
