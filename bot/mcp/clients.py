"""Which configured MCP client a bearer token belongs to.

Every configured token is compared, each in constant time over its sha256, so neither the
answer's timing nor an early exit says how much of a guess was right, or which client's
token came closest.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence

from bot.config import McpClient


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


def token_owner(clients: Sequence[McpClient], token: str) -> McpClient | None:
    """The client whose token this is; None for an empty or unknown token."""
    given = _digest(token)
    owner = None
    for client in clients:
        if hmac.compare_digest(given, _digest(client.token.get_secret_value())):
            owner = client
    return owner if token else None


def bearer_owner(clients: Sequence[McpClient], authorization: str | None) -> McpClient | None:
    """The client an `Authorization: Bearer <token>` header names; None when the header is
    missing, of another scheme, or carries a token no client has."""
    if not authorization:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    return token_owner(clients, token.strip())


def origin(client: McpClient) -> str:
    """How the audit log and the card name where a call came from."""
    return f"mcp:{client.name}"
