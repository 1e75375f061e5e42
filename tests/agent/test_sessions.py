"""Sessions: persisted after every step, and recovered after a restart."""

from __future__ import annotations

from bot.agent import Answer, Requester, SessionStatus
from bot.agent.sessions import Session, Sessions
from bot.config import Mode
from bot.state import State
from tests.agent.support import REQUESTER, SESSION, STAGING, AgentFactory
from tests.fakes.model_server import FakeModelServer, Turn, call, calls, say


def test_a_session_survives_a_round_trip_through_json() -> None:
    session = Session(
        id=SESSION,
        mode=Mode.ASK,
        messages=[{"role": "user", "content": "hi"}],
        tokens_used=42,
        status=SessionStatus.AWAITING_APPROVAL,
        last_error="boom",
        pending_id="p1",
        requester=Requester("U1", "Ada", "Asia/Tokyo"),
        iterations=3,
    )
    assert Session.from_json(session.to_json()) == session


async def test_sessions_are_stored_as_json_records(state: State) -> None:
    sessions = Sessions(state.sessions)
    session = await sessions.load_or_create(SESSION, Mode.AGENT)
    await sessions.save(session)
    raw = await state.sessions.get(SESSION)
    assert raw["id"] == SESSION and raw["status"] == "idle" and raw["mode"] == "agent"


async def test_the_session_is_saved_after_every_step_of_a_run(
    make_agent: AgentFactory, model_server: FakeModelServer
) -> None:
    agent = await make_agent()
    seen: list[tuple[str, list[str]]] = []

    async def responder(body: dict) -> Turn:
        session = await agent.session(SESSION)
        assert session is not None
        seen.append((session.status.value, [m["role"] for m in session.messages]))
        if len(seen) == 1:
            return calls(call("list_tables", {"database": STAGING}))
        return say("three tables")

    model_server.responder = responder
    outcome = await agent.handle_message(SESSION, "tables?", requester=REQUESTER, mode=Mode.AGENT)
    assert outcome == Answer(text="three tables")
    assert seen == [
        ("running", ["user"]),
        ("running", ["user", "assistant", "tool"]),
    ]
    session = await agent.session(SESSION)
    assert session is not None
    assert session.status is SessionStatus.IDLE
    assert [m["role"] for m in session.messages] == ["user", "assistant", "tool", "assistant"]
    assert session.requester == REQUESTER
    assert session.created_at <= session.updated_at


async def test_recover_marks_running_sessions_interrupted_and_leaves_the_others(
    make_agent: AgentFactory,
) -> None:
    agent = await make_agent()
    for name, status in [
        ("a", SessionStatus.RUNNING),
        ("b", SessionStatus.AWAITING_APPROVAL),
        ("c", SessionStatus.IDLE),
    ]:
        await agent.sessions.save(Session(id=name, mode=Mode.AGENT, status=status))
    await agent.recover()
    statuses = {name: (await agent.sessions.load(name)).status for name in "abc"}
    assert statuses == {
        "a": SessionStatus.INTERRUPTED,
        "b": SessionStatus.AWAITING_APPROVAL,
        "c": SessionStatus.IDLE,
    }
    interrupted = await agent.session("a")
    assert interrupted is not None and interrupted.last_error is not None
    assert interrupted.last_error.startswith("interrupted")
