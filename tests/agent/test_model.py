"""The model client against the fake OpenAI-compatible server, through the real `openai`."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from bot.agent.model import ModelClient, ModelError, build_model_client
from bot.config import Limits, Settings
from tests.fakes.model_server import FakeModelServer, LaterChunkFields, call, calls, say

USER = [{"role": "user", "content": "how many orders?"}]
GEMINI_EXTRA = {"extra_content": {"google": {"thought_signature": "c2lnbmF0dXJl"}}}


_clients: list[ModelClient] = []


def client_for(server: FakeModelServer, *, stream: bool, retries: int = 2) -> ModelClient:
    settings = Settings(
        openai_base_url=server.url,
        openai_api_key="test-key",
        openai_model="fake-model",
        limits=Limits(model_max_retries=retries, model_timeout_s=5),
    )
    client = build_model_client(settings, stream=stream)
    _clients.append(client)
    return client


@pytest.fixture(autouse=True)
async def close_clients() -> AsyncIterator[None]:
    yield
    while _clients:
        await _clients.pop().close()


@pytest.fixture(params=[True, False], ids=["streamed", "plain"])
def stream(request: pytest.FixtureRequest) -> bool:
    return request.param


async def test_a_text_answer_comes_back_with_its_usage(stream: bool) -> None:
    async with FakeModelServer([say("There are 4 orders.")]) as server:
        turn = await client_for(server, stream=stream).complete(USER, [])
    assert turn.text == "There are 4 orders."
    assert turn.tool_calls == ()
    assert turn.usage.total_tokens > 0
    assert (
        server.last_request["stream"] is stream if stream else "stream" not in server.last_request
    )


async def test_tool_calls_are_assembled_from_fragments_in_call_order(stream: bool) -> None:
    script = [
        calls(
            call("list_tables", {"database": "shop-staging"}),
            call("get_columns", {"database": "shop-staging", "table": "orders"}),
            text="Let me look.",
        )
    ]
    async with FakeModelServer(script, fragment_chars=3) as server:
        turn = await client_for(server, stream=stream).complete(USER, [])
    assert turn.text == "Let me look."
    assert [c.name for c in turn.tool_calls] == ["list_tables", "get_columns"]
    assert json.loads(turn.tool_calls[1].arguments) == {
        "database": "shop-staging",
        "table": "orders",
    }
    assert all(c.id for c in turn.tool_calls)


@pytest.mark.parametrize("later_fields", ["empty", "null"])
async def test_an_id_or_name_sent_blank_on_a_later_chunk_does_not_overwrite_the_first(
    later_fields: LaterChunkFields,
) -> None:
    script = [calls(call("get_columns", {"database": "shop", "table": "orders"}, id="call_A"))]
    async with FakeModelServer(script, later_chunk_fields=later_fields) as server:
        turn = await client_for(server, stream=True).complete(USER, [])
    (only,) = turn.tool_calls
    assert (only.id, only.name) == ("call_A", "get_columns")
    assert json.loads(only.arguments) == {"database": "shop", "table": "orders"}


async def test_provider_fields_on_tool_calls_are_sent_back_unchanged(stream: bool) -> None:
    script = [calls(call("list_databases", {}, id="call_G", extra=GEMINI_EXTRA)), say("ok")]
    async with FakeModelServer(script) as server:
        client = client_for(server, stream=stream)
        turn = await client.complete(USER, [])
        history = [
            *USER,
            turn.assistant_message(),
            {"role": "tool", "tool_call_id": "call_G", "content": "[]"},
        ]
        await client.complete(history, [])
    sent_back = server.last_request["messages"][1]["tool_calls"][0]
    assert sent_back["extra_content"] == GEMINI_EXTRA["extra_content"]
    assert sent_back["id"] == "call_G"
    assert sent_back["function"]["name"] == "list_databases"


async def test_server_errors_are_retried_by_the_client_then_succeed(stream: bool) -> None:
    async with FakeModelServer([say("recovered")]) as server:
        server.fail_next(500, times=2)
        turn = await client_for(server, stream=stream, retries=2).complete(USER, [])
    assert turn.text == "recovered"
    assert len(server.requests) == 3


async def test_server_errors_beyond_the_retries_fail_with_the_status(stream: bool) -> None:
    async with FakeModelServer([say("never")]) as server:
        server.fail_next(503, times=3)
        with pytest.raises(ModelError, match="HTTP 503 after 2 attempts"):
            await client_for(server, stream=stream, retries=1).complete(USER, [])
    assert len(server.requests) == 2


async def test_a_refused_api_key_fails_at_once_with_a_clear_error(stream: bool) -> None:
    async with FakeModelServer([say("never")], api_key="the-real-key") as server:
        with pytest.raises(ModelError, match=r"the model server refused the API key \(401\)"):
            await client_for(server, stream=stream, retries=3).complete(USER, [])
    assert len(server.requests) == 1  # 401 is not retried


async def test_a_bad_request_is_not_retried_and_says_what_the_server_said() -> None:
    async with FakeModelServer() as server:  # an empty script answers 400
        with pytest.raises(ModelError, match=r"rejected the request \(400\): .*no scripted turn"):
            await client_for(server, stream=False, retries=3).complete(USER, [])
    assert len(server.requests) == 1


async def test_an_unreachable_server_is_named_in_the_error() -> None:
    server = FakeModelServer()
    await server.start()
    url = server.url
    await server.stop()
    settings = Settings(openai_base_url=url, openai_api_key="k", limits=Limits(model_max_retries=0))
    client = build_model_client(settings)
    _clients.append(client)
    with pytest.raises(ModelError, match="cannot reach the model server"):
        await client.complete(USER, [])


async def test_the_tools_offered_reach_the_server() -> None:
    tool = {
        "type": "function",
        "function": {"name": "list_databases", "parameters": {"type": "object", "properties": {}}},
    }
    async with FakeModelServer([say("hi")]) as server:
        await client_for(server, stream=True).complete(USER, [tool])
    assert server.tools_offered() == ["list_databases"]
    assert server.last_request["model"] == "fake-model"
    assert server.headers[-1]["Authorization"] == "Bearer test-key"
