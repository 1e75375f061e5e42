"""A streamed answer's lines are split from the body's bytes: wherever the chunks break (inside
a CRLF, inside a multi-byte character), the lines are those of the whole body."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.agent.streaming import stream_lines

BODY = (
    'data: {"choices":[{"delta":{"content":"caf\u00e9 \U0001f642"}}]}\r\n'
    "\r\n"
    ": keep-alive\n"
    'data: {"choices":[{"delta":{"content":"\u65e5\u672c"}}]}\n'
    "\n"
    "event: lone carriage return\r"
    "data: [DONE]"
).encode()

CHUNKINGS = [
    # (chunks, why)
    ([BODY], "the whole body at once"),
    ([bytes([b]) for b in BODY], "one byte at a time: every CRLF and character split"),
    ([b"", BODY, b""], "empty chunks around it"),
    ([BODY[: BODY.index(b"\r\n") + 1], BODY[BODY.index(b"\r\n") + 1 :]], "a CRLF split"),
    ([BODY[:40], BODY[40:]], "inside the first multi-byte character"),
    ([b"data: x\n"], "one line, ended"),
    ([b"data: x"], "one line, not ended"),
    ([b"\xff\xfe\n"], "bytes that are not UTF-8"),
]


async def _chunks(chunks: list[bytes]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


@pytest.mark.parametrize(("chunks", "why"), CHUNKINGS, ids=[why for _, why in CHUNKINGS])
async def test_the_lines_are_the_whole_bodys_wherever_the_chunks_break(
    chunks: list[bytes], why: str
) -> None:
    whole = b"".join(chunks)
    expected = [line.decode("utf-8", "replace") for line in whole.splitlines()]
    assert [line async for line in stream_lines(_chunks(chunks))] == expected, why


async def test_every_split_of_the_body_into_two_chunks_gives_its_lines() -> None:
    expected = [line async for line in stream_lines(_chunks([BODY]))]
    assert expected[0].endswith('"caf\u00e9 \U0001f642"}}]}') and expected[-1] == "data: [DONE]"
    for cut in range(len(BODY) + 1):
        got = [line async for line in stream_lines(_chunks([BODY[:cut], BODY[cut:]]))]
        assert got == expected, cut
