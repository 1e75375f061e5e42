"""The runs going on in this process, so that a person can stop one; and what a restart
makes of a run the last process left going.

Each run executes in a task of its own: `stop` cancels that task and nothing else, so the
adapter's handler that asked for the run carries on and delivers a Stopped outcome. A
statement the run is executing is killed on the server by the data layer when its task is
cancelled.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from bot.agent import tools
from bot.agent.loop import open_calls
from bot.agent.outcomes import Outcome
from bot.agent.sessions import Session
from bot.agent.tools import ToolReply
from bot.agent.turns import ToolCall
from bot.config import Mode

INTERRUPTED = "interrupted: the bot stopped during this run"
INTERRUPTED_CHANGE = f"{INTERRUPTED}, while a change was outstanding"
INTERRUPTED_CALL = (
    "interrupted: the bot stopped while this ran; it may or may not have been applied"
)


def stopped_call(by: str) -> str:
    """The result of a call a stopped run left open (perhaps killed while it ran)."""
    return f"stopped by {by}: not run, or cancelled on the server while it ran"


def stopped_note(by: str) -> str:
    """What the model reads before the next message of a thread whose run was stopped."""
    return f"[The previous request was stopped by {by} before it finished.]"


@dataclass
class _Running:
    task: asyncio.Future[Outcome]
    stopped_by: str | None = None
    ended: asyncio.Event = field(default_factory=asyncio.Event)  # its outcome is made


class Runs:
    def __init__(self) -> None:
        self._running: dict[str, _Running] = {}

    async def run(
        self,
        session_id: str,
        work: Awaitable[Outcome],
        on_stop: Callable[[str], Awaitable[Outcome]],
    ) -> Outcome:
        """`work` in a task of its own; `on_stop(by)` makes the outcome of a stopped one."""
        task = asyncio.ensure_future(work)
        running = self._running[session_id] = _Running(task)
        try:
            return await task
        except asyncio.CancelledError:
            if running.stopped_by is None or not task.cancelled():
                raise  # our caller was cancelled (shutdown): so is the run
            return await on_stop(running.stopped_by)
        finally:
            running.ended.set()
            if self._running.get(session_id) is running:
                del self._running[session_id]

    async def stop(self, session_id: str, by: str) -> bool:
        """Cancel the run; True once it has ended (its statement killed, its session
        saved), False when none was running."""
        running = self._running.get(session_id)
        if running is None or running.task.done() or running.stopped_by is not None:
            return False
        running.stopped_by = by
        running.task.cancel()
        await running.ended.wait()
        return True

    def is_running(self, session_id: str) -> bool:
        running = self._running.get(session_id)
        return running is not None and not running.task.done()


def outstanding_write(session: Session) -> ToolCall | None:
    """The first open call of the session that may change data, if any: a run that stopped
    there cannot be carried on without perhaps repeating a change."""
    for call in open_calls(session.messages):
        prepared = tools.prepare(call, session.mode)
        if isinstance(prepared, ToolReply):
            continue
        if prepared.tool.may_write is not None and prepared.tool.may_write(prepared.arguments):
            return call
    return None


def database_and_sql(call: ToolCall) -> tuple[str, str]:
    """What an execute_query call was to run, for the person to check."""
    prepared = tools.prepare(call, Mode.AGENT)
    if isinstance(prepared, ToolReply):
        return "", ""
    arguments = prepared.arguments
    return str(getattr(arguments, "database", "")), str(getattr(arguments, "sql", ""))
