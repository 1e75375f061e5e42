"""ask_user: the model asks the person, the run pauses, and resumes with {kind, answer, value}."""

from __future__ import annotations

import json

import pytest

from bot.agent import Agent, AlreadyDecided, Answer, SessionStatus
from bot.agent.outcomes import AwaitingReply, NotYourQuestion, Option, Requester
from bot.config import Mode
from tests.agent.support import REQUESTER, SESSION, STAGING, AgentFactory
from tests.fakes.model_server import FakeModelServer, call, calls, say

CHOOSE = {
    "kind": "choose",
    "question": "Which database?",
    "options": [
        {"label": "Staging", "value": "shop-staging"},
        {"label": "Production", "value": "shop-prod"},
    ],
}


async def ask(agent: Agent, text: str = "how many orders?", mode: Mode = Mode.ASK):
    return await agent.handle_message(SESSION, text, requester=REQUESTER, mode=mode)


async def test_a_choose_question_pauses_and_resumes_with_the_chosen_value(
    make_agent: AgentFactory, model_server: FakeModelServer
) -> None:
    agent = await make_agent()
    model_server.script(calls(call("ask_user", CHOOSE), text="Let me check."), say("Staging."))
    paused = await ask(agent)
    assert isinstance(paused, AwaitingReply)
    question = paused.question
    assert question.kind == "choose" and question.text == "Which database?"
    assert question.options == (Option("Staging", STAGING), Option("Production", "shop-prod"))
    assert question.requester == REQUESTER.user_id
    assert paused.text == "Let me check."
    session = await agent.session(SESSION)
    assert session is not None and session.status is SessionStatus.AWAITING_REPLY

    outcome = await agent.answer(
        question.id, user=REQUESTER.user_id, answer="Staging", value=STAGING
    )
    assert outcome == Answer(text="Staging.")
    assert json.loads(model_server.new_tool_results()[0]) == {
        "kind": "choose",
        "answer": "Staging",
        "value": STAGING,
    }


async def test_only_the_person_asked_may_answer(
    make_agent: AgentFactory, model_server: FakeModelServer
) -> None:
    agent = await make_agent()
    model_server.script(calls(call("ask_user", CHOOSE)), say("ok"))
    paused = await ask(agent)
    assert isinstance(paused, AwaitingReply)
    with pytest.raises(NotYourQuestion):
        await agent.answer(paused.question.id, user="U0SOMEONE", answer="Production")
    assert await agent.question(paused.question.id) is not None, "nothing changed"
    await agent.answer(paused.question.id, user=REQUESTER.user_id, answer="Staging")
    with pytest.raises(AlreadyDecided):
        await agent.answer(paused.question.id, user=REQUESTER.user_id, answer="Staging")


async def test_an_input_question_is_answered_by_the_next_reply_in_the_thread(
    make_agent: AgentFactory, model_server: FakeModelServer
) -> None:
    agent = await make_agent()
    ask_id = {"kind": "input", "question": "Which order id?"}
    model_server.script(calls(call("ask_user", ask_id)), say("Order 11 is pending."))
    paused = await ask(agent)
    assert isinstance(paused, AwaitingReply) and paused.question.kind == "input"
    outcome = await ask(agent, text="11")
    assert outcome == Answer(text="Order 11 is pending.")
    assert json.loads(model_server.new_tool_results()[0]) == {
        "kind": "input",
        "answer": "11",
        "value": "11",
    }


async def test_someone_elses_reply_supersedes_an_input_question_instead_of_answering_it(
    make_agent: AgentFactory, model_server: FakeModelServer
) -> None:
    agent = await make_agent()
    model_server.script(
        calls(call("ask_user", {"kind": "input", "question": "Which order id?"})), say("Hello.")
    )
    paused = await ask(agent)
    assert isinstance(paused, AwaitingReply)
    other = Requester(user_id="U0OTHER")
    outcome = await agent.handle_message(SESSION, "hi", requester=other, mode=Mode.ASK)
    assert outcome == Answer(text="Hello.")
    results = [m for m in model_server.requests[-1]["messages"] if m["role"] == "tool"]
    assert results[-1]["content"] == "not answered; superseded by a new message"
    assert await agent.question(paused.question.id) is None


async def test_a_new_message_supersedes_a_choose_question(
    make_agent: AgentFactory, model_server: FakeModelServer
) -> None:
    agent = await make_agent()
    model_server.script(calls(call("ask_user", CHOOSE)), say("Sure."))
    paused = await ask(agent)
    assert isinstance(paused, AwaitingReply)
    assert await ask(agent, text="never mind") == Answer(text="Sure.")
    with pytest.raises(AlreadyDecided):
        await agent.answer(paused.question.id, user=REQUESTER.user_id, answer="Staging")


OPTION_CASES = [
    # (options sent by the model, kind asked, options kept, reason)
    (
        [{"label": "A", "value": "a"}, {"label": "A", "value": "b"}],
        "choose",
        [Option("A", "a")],
        "a duplicated label is dropped",
    ),
    (
        [{"label": "A", "value": "x"}, {"label": "B", "value": "x"}],
        "choose",
        [Option("A", "x")],
        "a duplicated value is dropped",
    ),
    (
        [{"label": "  ", "value": "a"}, {"label": "B"}],
        "choose",
        [Option("B", "B")],
        "an empty label is dropped; a missing value is the label",
    ),
    ([{"label": ""}], "input", [], "a choose with no valid option falls back to input"),
    ([], "input", [], "a choose with no options at all falls back to input"),
]


@pytest.mark.parametrize(
    ("options", "kind", "kept", "reason"), OPTION_CASES, ids=[c[-1] for c in OPTION_CASES]
)
async def test_options_are_cleaned(
    make_agent: AgentFactory, model_server: FakeModelServer, options, kind, kept, reason
) -> None:
    agent = await make_agent()
    arguments = {"kind": "choose", "question": "Pick", "options": options}
    model_server.script(calls(call("ask_user", arguments)), say("ok"))
    paused = await ask(agent)
    assert isinstance(paused, AwaitingReply)
    assert paused.question.kind == kind, reason
    assert list(paused.question.options) == kept, reason


async def test_a_confirm_question_offers_yes_and_no(
    make_agent: AgentFactory, model_server: FakeModelServer
) -> None:
    agent = await make_agent()
    model_server.script(
        calls(call("ask_user", {"kind": "confirm", "question": "Go on?"})), say("Done.")
    )
    paused = await ask(agent, mode=Mode.AGENT)
    assert isinstance(paused, AwaitingReply)
    assert paused.question.options == (Option("Yes", "yes"), Option("No", "no"))


async def test_a_question_survives_a_restart(
    make_agent: AgentFactory, model_server: FakeModelServer
) -> None:
    model_server.script(calls(call("ask_user", CHOOSE)), say("Staging it is."))
    paused = await ask(await make_agent())
    assert isinstance(paused, AwaitingReply)
    restarted = await make_agent()
    await restarted.recover()
    outcome = await restarted.answer(
        paused.question.id, user=REQUESTER.user_id, answer="Staging", value=STAGING
    )
    assert outcome == Answer(text="Staging it is.")
