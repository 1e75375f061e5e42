"""The Dockerfile, read instruction by instruction (no container runtime is reachable here):
multi-stage on a slim Python, the locked dependencies, an unprivileged user, nothing written
outside its volume, a health check on /health, PORT exposed, and every file it copies there."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Instruction:
    keyword: str
    arguments: str
    stage: int  # the FROM it belongs to, from 0


def instructions(text: str) -> list[Instruction]:
    """Instructions with their continuation lines joined, comments dropped."""
    logical: list[str] = []
    pending = ""
    for line in text.splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        logical.append(pending + line)
        pending = ""
    found, stage = [], -1
    for line in logical:
        keyword, _, arguments = line.strip().partition(" ")
        stage += keyword.upper() == "FROM"
        found.append(Instruction(keyword.upper(), arguments.strip(), stage))
    return found


DOCKERFILE = instructions((REPOSITORY / "Dockerfile").read_text())
FINAL = max(i.stage for i in DOCKERFILE)


def of(keyword: str, stage: int | None = None) -> list[Instruction]:
    return [i for i in DOCKERFILE if i.keyword == keyword and (stage is None or i.stage == stage)]


def environment() -> dict[str, str]:
    values: dict[str, str] = {}
    for instruction in of("ENV", FINAL):
        for pair in shlex.split(instruction.arguments):
            key, _, value = pair.partition("=")
            values[key] = value
    return values


def test_it_builds_in_one_stage_and_runs_from_a_slim_python() -> None:
    bases = [i.arguments.split()[0] for i in of("FROM")]
    assert len(bases) >= 2
    assert all(re.fullmatch(r"python:3\.1[1-9]-slim", base) for base in bases), bases
    assert " AS " in of("FROM")[0].arguments.upper()
    assert any("--from=" in i.arguments for i in of("COPY", FINAL))
    assert not of("ADD"), "ADD fetches and unpacks: COPY only"


def test_it_installs_the_locked_versions() -> None:
    installs = [i.arguments for i in of("RUN") if "pip install" in i.arguments]
    assert any(re.search(r"(--constraint|-c|-r)\s+requirements\.lock", run) for run in installs)
    copied = " ".join(i.arguments for i in of("COPY", 0))
    assert "requirements.lock" in copied


def test_it_runs_as_an_unprivileged_user() -> None:
    [user] = of("USER", FINAL)
    name = user.arguments.split(":")[0]
    assert name not in ("root", "0")
    assert DOCKERFILE.index(user) > DOCKERFILE.index(of("COPY", FINAL)[-1])


def test_it_writes_only_to_its_volume() -> None:
    env = environment()
    [volume] = of("VOLUME", FINAL)
    assert env["DBAGENT_STATE_DIR"] in json.loads(volume.arguments)
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"  # no .pyc next to the code


def test_the_port_is_exposed_and_health_is_checked_on_it() -> None:
    env = environment()
    [expose] = of("EXPOSE", FINAL)
    assert expose.arguments == env["PORT"]
    [check] = of("HEALTHCHECK", FINAL)
    assert "/health" in check.arguments and "PORT" in check.arguments
    assert "CMD" in check.arguments


def test_it_serves_by_default() -> None:
    [command] = of("CMD", FINAL)
    assert json.loads(command.arguments) == ["dbagent", "serve"]


def test_every_file_it_copies_is_in_the_repository() -> None:
    for instruction in of("COPY"):
        words = [w for w in instruction.arguments.split() if not w.startswith("--")]
        if "--from=" in instruction.arguments:
            continue
        for source in words[:-1]:
            assert (REPOSITORY / source).exists(), source
    # The package's links to top-level files (skills, manifest, the example) resolve there.
    copied = {w for i in of("COPY", 0) for w in i.arguments.split()[:-1]}
    for link in (REPOSITORY / "bot").iterdir():
        if link.is_symlink():
            target = Path(link.readlink()).parts[-1]
            assert target in copied, f"bot/{link.name} points to {target}, which is not copied"


def test_the_user_it_runs_as_is_made_with_those_ids_and_owns_the_volume() -> None:
    [user] = of("USER", FINAL)
    uid, _, gid = user.arguments.partition(":")
    made = " ".join(i.arguments for i in of("RUN", FINAL))
    assert f"--uid {uid}" in made and f"--gid {gid}" in made
    env = environment()
    assert f"chown {uid}:{gid} {env['DBAGENT_STATE_DIR']}" in made
