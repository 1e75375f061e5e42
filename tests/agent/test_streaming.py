"""Assembling streamed chunks, fed the JSON a server sends."""

from __future__ import annotations

from bot.agent.streaming import StreamAssembler


def chunk(delta: dict, usage: dict | None = None) -> dict:
    return {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": None}] if delta else [],
        "usage": usage,
    }


def fragment(index: int | None, **fields: object) -> dict:
    return {"tool_calls": [{"index": index, **fields}]}


def test_arguments_are_joined_by_index_even_when_calls_interleave() -> None:
    assembler = StreamAssembler()
    assembler.add(chunk(fragment(0, id="a", type="function", function={"name": "x"})))
    assembler.add(chunk(fragment(1, id="b", type="function", function={"name": "y"})))
    assembler.add(chunk(fragment(0, function={"arguments": '{"k":'})))
    assembler.add(chunk(fragment(1, function={"arguments": "{}"})))
    assembler.add(chunk(fragment(0, function={"arguments": "1}"})))
    turn = assembler.turn()
    assert [(c.id, c.name, c.arguments) for c in turn.tool_calls] == [
        ("a", "x", '{"k":1}'),
        ("b", "y", "{}"),
    ]


def test_a_repeated_name_is_not_doubled_and_a_blank_id_does_not_erase_the_first() -> None:
    assembler = StreamAssembler()
    assembler.add(chunk(fragment(0, id="a", function={"name": "list_tables", "arguments": ""})))
    assembler.add(chunk(fragment(0, id="", function={"name": "list_tables", "arguments": "{}"})))
    (only,) = assembler.turn().tool_calls
    assert (only.id, only.name, only.arguments) == ("a", "list_tables", "{}")


def test_a_call_without_an_id_gets_one_so_its_result_can_refer_to_it() -> None:
    assembler = StreamAssembler()
    assembler.add(chunk(fragment(0, function={"name": "list_databases", "arguments": "{}"})))
    assert assembler.turn().tool_calls[0].id.startswith("call_")


def test_provider_fields_are_kept_from_the_chunk_that_carried_them() -> None:
    signature = {"google": {"thought_signature": "abc"}}
    assembler = StreamAssembler()
    assembler.add(chunk(fragment(0, id="a", function={"name": "x"}, extra_content=signature)))
    assembler.add(chunk(fragment(0, function={"arguments": "{}"})))
    (only,) = assembler.turn().tool_calls
    assert only.extra == {"extra_content": signature}
    assert only.to_message()["extra_content"] == signature


def test_text_and_the_final_usage_chunk_are_collected() -> None:
    assembler = StreamAssembler()
    assembler.add(chunk({"role": "assistant", "content": "Hel"}))
    assembler.add(chunk({"content": "lo"}))
    assembler.add(chunk({}, usage={"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}))
    turn = assembler.turn()
    assert turn.text == "Hello"
    assert turn.usage.total_tokens == 10


def test_repeated_call_ids_are_made_unique_so_every_call_gets_its_own_result() -> None:
    assembler = StreamAssembler()
    assembler.add(chunk(fragment(0, id="0", function={"name": "a", "arguments": "{}"})))
    assembler.add(chunk(fragment(1, id="0", function={"name": "b", "arguments": "{}"})))
    assert [c.id for c in assembler.turn().tool_calls] == ["0", "0_2"]
