"""`python -m bot console [--mode agent|ask] [--database NAME]`: the agent in a terminal.

The same loop the Slack bot runs, with the person at the terminal as requester and approver:
an approval request is a y/n prompt. Input is read on a worker thread, so the event loop
stays free while it waits.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import os
import sys
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TextIO

from bot.agent import (
    Agent,
    Answer,
    ApprovalDecision,
    AwaitingApproval,
    AwaitingReply,
    Failed,
    Outcome,
    Progress,
    QueryResult,
    Requester,
    Step,
)
from bot.changes.types import UNDO as UNDO_KIND
from bot.config import ConfigError, Mode, load_settings
from bot.console_impact import impact_lines
from bot.state.grants import GrantScope
from bot.visible import visible

ReadLine = Callable[[str], Awaitable[str | None]]
PREVIEW_ROWS = 20


def local_timezone() -> str:
    """The terminal's IANA time zone name: $TZ, /etc/timezone or /etc/localtime's link."""
    if os.environ.get("TZ", "").strip("/:"):
        return os.environ["TZ"].lstrip(":")
    try:
        return Path("/etc/timezone").read_text().strip() or "UTC"
    except OSError:
        pass
    try:
        target = os.readlink("/etc/localtime")
    except OSError:
        return "UTC"
    return target.split("zoneinfo/", 1)[1] if "zoneinfo/" in target else "UTC"


async def read_line(prompt: str) -> str | None:
    """input() on a thread; None at end of input."""
    try:
        return await asyncio.to_thread(input, prompt)
    except EOFError:
        return None


def render_result(result: QueryResult, limit: int = PREVIEW_ROWS) -> str:
    """Rows as a text table; cells and names shown with visible() before they are measured."""
    rows = [
        [("NULL" if cell is None else visible(str(cell))) for cell in row] for row in result.rows
    ]
    shown = rows[:limit]
    columns = [visible(column) for column in result.columns]
    widths = [
        min(40, max([len(c)] + [len(row[i]) for row in shown])) for i, c in enumerate(columns)
    ]

    def line(cells: list[str]) -> str:
        return " | ".join(cell[:w].ljust(w) for cell, w in zip(cells, widths, strict=True))

    out = [
        f"-- {result.database}: {visible(result.sql)}",
        line(columns),
        "-+-".join("-" * w for w in widths),
    ]
    out += [line(row) for row in shown]
    more = len(rows) - len(shown)
    if more > 0:
        out.append(f"… {more} more rows")
    if result.truncated:
        out.append("(truncated: the query had more rows than were fetched)")
    return "\n".join(out)


async def run_console(
    agent: Agent,
    *,
    mode: Mode,
    requester: Requester,
    read: ReadLine = read_line,
    out: TextIO | None = None,
    session_id: str | None = None,
) -> int:
    out = out or sys.stdout
    session = session_id or f"console:{uuid.uuid4().hex[:12]}"
    # One person at a terminal both asks and approves: four eyes is for shared channels.
    agent.settings.approvals.allow_self_approval = True
    agent.settings.approvals.required = 1
    agent.settings.approvals.environments = {}

    def say(text: str) -> None:
        # Everything printed may hold the model's or the database's text: a carriage return
        # or an ANSI escape in it could rewrite what the person reads before typing "y".
        out.write(visible(text) + "\n")
        out.flush()

    async def progress(step: Step) -> None:
        if step.status == "in_progress":
            say(f"  … {step.title}…")

    say(f"dbagent console ({mode.value} mode). Ask a question; an empty line or Ctrl-D ends.")
    undoable: list[str] = []  # the undo records of changes approved here, newest last

    async def decided(decision: ApprovalDecision) -> None:
        say(f"  → {decision.summary}")
        if decision.approved and decision.undo_id:
            undoable.append(decision.undo_id)
        elif decision.approved and decision.undo_reason:
            say(f"  (no Undo: {decision.undo_reason})")

    while True:
        text = await read("you> ")
        if text is None or not text.strip():
            return 0
        outcome: Outcome = await agent.handle_message(
            session, text, requester=requester, mode=mode, progress=progress
        )
        while True:
            outcome = await _settle(agent, outcome, requester, read, say, progress, decided)
            _show_end(outcome, say)
            if not undoable:
                break
            undo_id = undoable.pop()
            choice = ((await read("undo the change just approved? [y/N]: ")) or "").strip()
            if choice.lower() not in ("y", "yes"):
                break
            outcome = await agent.undo(undo_id, requester=requester, session_id=session)


async def _settle(
    agent: Agent,
    outcome: Outcome,
    requester: Requester,
    read: ReadLine,
    say: Callable[[str], None],
    progress: Progress,
    decided: Callable[[ApprovalDecision], Awaitable[None]],
) -> Outcome:
    """Through the run's questions and approvals: each approval shown as the card shows it
    (the statement, its impact, what it reaches, whether it can be undone), then y/n."""
    while isinstance(outcome, AwaitingApproval | AwaitingReply):
        if isinstance(outcome, AwaitingReply):
            outcome = await _answer_question(agent, outcome, requester, read, say, progress)
            continue
        if outcome.text:
            say(outcome.text)
        for result in outcome.results:
            say(render_result(result))
        pending = outcome.pending
        heading = "Undo" if pending.kind == UNDO_KIND else "Approval needed"
        say(
            f"\n{heading} on {pending.database} ({pending.environment}), "
            f"risk {pending.risk}:\n{visible(pending.sql)}\n"
        )
        for line in impact_lines(pending.impact):
            say(line)
        if pending.reason:
            say(f"({pending.reason})")
        choice = ((await read("approve? [y]es once / [t]hread / [N]o: ")) or "").strip()
        choice = choice.lower()
        if choice in ("y", "yes", "t", "thread"):
            scope = GrantScope.THREAD if choice.startswith("t") else GrantScope.ONCE
            outcome = await agent.approve(
                pending.id,
                approver=requester.user_id,
                scope=scope,
                progress=progress,
                on_decided=decided,
            )
        else:
            outcome = await agent.deny(
                pending.id, approver=requester.user_id, progress=progress, on_decided=decided
            )
    return outcome


def _show_end(outcome: Outcome, say: Callable[[str], None]) -> None:
    if isinstance(outcome, Answer):
        say(f"\n{outcome.text}\n")
        for result in outcome.results:
            say(render_result(result) + "\n")
    elif isinstance(outcome, Failed):
        say(f"error: {outcome.message}")
        for result in outcome.results:
            say(render_result(result) + "\n")


async def _answer_question(
    agent: Agent,
    outcome: AwaitingReply,
    requester: Requester,
    read: Callable[[str], Awaitable[str | None]],
    say: Callable[[str], None],
    progress: Progress,
) -> Outcome:
    """The model's question as a prompt: numbered options for choose and confirm."""
    if outcome.text:
        say(outcome.text)
    question = outcome.question
    say(f"\n{question.text}")
    for number, option in enumerate(question.options, start=1):
        say(f"  {number}. {option.label}")
    typed = ((await read("answer> ")) or "").strip()
    answer, value = typed, typed
    if question.options:
        chosen = next(
            (
                option
                for number, option in enumerate(question.options, start=1)
                if typed in (str(number), option.label, option.value)
            ),
            None,
        )
        if chosen is not None:
            answer, value = chosen.label, chosen.value
    return await agent.answer(
        question.id, user=requester.user_id, answer=answer, value=value, progress=progress
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bot console", description=__doc__)
    parser.add_argument("--mode", choices=[m.value for m in Mode], default=Mode.AGENT.value)
    parser.add_argument("--database", help="offer only this configured database")
    return parser


async def console_main(argv: list[str]) -> int:
    from bot.app import agent_problem, running_app  # the parts, only when the console runs

    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    settings = load_settings()
    databases = settings.databases
    if args.database:
        databases = [db for db in databases if db.name == args.database]
        if not databases:
            names = ", ".join(db.name for db in settings.databases) or "none"
            raise ConfigError(f"--database {args.database!r} is not configured (have: {names})")
    problem = agent_problem(settings)
    if problem is not None:
        raise ConfigError(problem)
    async with running_app(settings, databases=databases) as app:
        user = getpass.getuser() or "console"
        requester = Requester(user_id=user, name=user, timezone=local_timezone())
        return await run_console(app.agent, mode=Mode(args.mode), requester=requester)
