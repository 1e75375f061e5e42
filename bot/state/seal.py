"""Integrity of what the bot acts on from a store others could write: an HMAC-SHA256 over
grants, pending approvals and forwarded Stop clicks, with a key from the environment
(``DBAGENT_STATE_KEY``), checked whenever one is read.

A grant lets SQL run without a click, a pending approval is what an approver's click runs,
and a forwarded Stop carries the id of the person who clicked: anything that can write the
bot's Redis could otherwise plant a grant for any SQL, rewrite a card's SQL after it was
shown, or stop someone else's run in their name. Each record carries ``mac``, computed over
its kind and its other fields (canonical JSON: sorted keys); a record whose ``mac`` is
missing or wrong is treated as absent (fail closed) and logged. A Redis state store is
always signed: with ``DBAGENT_STATE_KEY`` (at least 32 characters, the same for every
process serving one app) or, when it is not set, with a key derived from the Slack bot
token, a secret every process of the app already shares and the store never holds (set the
key of its own to rotate it apart from the token). The embedded store is a private file of
one process (0600) and is not signed.

What it cannot stop: a record the attacker saw earlier, put back while it is still valid (a
grant lives minutes; its expiry is inside the MAC), or a record deleted. So the Redis must
still be the bot's alone (docs/operations.md).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from typing import Literal

from bot.config import Settings
from bot.state.codec import Record
from bot.state.errors import StateError

log = logging.getLogger(__name__)

KEY_ENV = "DBAGENT_STATE_KEY"
MIN_KEY_CHARS = 32
MAC = "mac"
Kind = Literal["grant", "pending", "stop"]


class Seal:
    """Signs records before they are stored, checks them when read. Without a key it
    neither signs nor checks (the embedded store)."""

    def __init__(self, key: str | None) -> None:
        if key is not None and len(key) < MIN_KEY_CHARS:
            raise StateError(
                f"{KEY_ENV} is too short: use at least {MIN_KEY_CHARS} random characters "
                "(openssl rand -hex 32), the same for every process of the app"
            )
        self._key = None if key is None else key.encode()

    @property
    def enabled(self) -> bool:
        return self._key is not None

    def sign(self, kind: Kind, record: Record) -> Record:
        """``record`` with its ``mac`` (as it is when there is no key)."""
        if self._key is None:
            return record
        unsigned = {name: value for name, value in record.items() if name != MAC}
        return {**unsigned, MAC: self._mac(kind, unsigned)}

    def opened(self, kind: Kind, record: Record, where: str) -> Record | None:
        """``record`` without its ``mac`` when the mac is right; None (and one log line)
        when it is missing or wrong: the record is treated as absent."""
        if self._key is None:
            return record
        unsigned = {name: value for name, value in record.items() if name != MAC}
        mac = record.get(MAC)
        if isinstance(mac, str) and hmac.compare_digest(mac, self._mac(kind, unsigned)):
            return unsigned
        log.error("state record %s failed its integrity check (%s): ignored", where, KEY_ENV)
        return None

    def _mac(self, kind: Kind, record: Record) -> str:
        assert self._key is not None
        text = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        message = f"{kind}\x1f{text}".encode("utf-8", "surrogatepass")
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()


UNSEALED = Seal(None)
_DERIVED_LABEL = b"dbagent state seal v1"


def state_key(settings: Settings) -> str | None:
    """The key that signs the shared store: ``DBAGENT_STATE_KEY``, else one derived from
    ``SLACK_BOT_TOKEN`` (HMAC-SHA256 of a fixed label: the token itself is never the key),
    else None."""
    if settings.dbagent_state_key is not None:
        return settings.dbagent_state_key.get_secret_value()
    if settings.slack_bot_token is not None and settings.slack_bot_token.get_secret_value():
        token = settings.slack_bot_token.get_secret_value().encode()
        return hmac.new(token, _DERIVED_LABEL, hashlib.sha256).hexdigest()
    return None
