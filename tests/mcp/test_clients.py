"""Which client a bearer token names: every token compared, an unknown one names nobody."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from bot.config import McpClient
from bot.mcp.clients import bearer_owner, token_owner

ALICE = McpClient(name="alice-laptop", token=SecretStr("a" * 40), user="U0ALICE")
BOB = McpClient(name="bob-ci", token=SecretStr("b" * 40), user="U0BOB")
CLIENTS = (ALICE, BOB)


@pytest.mark.parametrize(
    ("header", "owner", "why"),
    [
        ("Bearer " + "a" * 40, ALICE, "alice's token"),
        ("Bearer " + "b" * 40, BOB, "bob's token, the second configured"),
        ("bearer " + "a" * 40, ALICE, "the scheme is case-insensitive"),
        ("Bearer  " + "a" * 40 + " ", ALICE, "spaces around the token"),
        ("Bearer " + "a" * 39, None, "a prefix of a real token"),
        ("Bearer " + "a" * 41, None, "a real token and more"),
        ("Bearer " + "A" * 40, None, "tokens are case-sensitive"),
        ("Bearer ", None, "an empty token"),
        ("Bearer", None, "no token at all"),
        ("Basic " + "a" * 40, None, "another scheme"),
        ("a" * 40, None, "no scheme"),
        ("", None, "an empty header"),
        (None, None, "no header"),
    ],
)
def test_the_header_names_its_client(header: str | None, owner: McpClient | None, why: str) -> None:
    assert bearer_owner(CLIENTS, header) == owner, why


def test_no_clients_no_owner() -> None:
    assert token_owner((), "a" * 40) is None
