"""Integrity of what the bot acts on from a store others could write: an HMAC-SHA256 over
grants, pending approvals and forwarded Stop clicks, with a key from the environment
(``DBAGENT_STATE_KEY``), checked whenever one is read.

A grant lets SQL run without a click, a pending approval is what an approver's click runs,
and a forwarded Stop carries the id of the person who clicked: anything that can write the
bot's Redis could otherwise plant a grant for any SQL, rewrite a card's SQL after it was
shown, or stop someone else's run in their name. Each record carries ``mac``, computed over
its kind and its other fields (canonical JSON: sorted keys); a record whose ``mac`` is
missing or wrong is treated as absent (fail closed) and logged. A Redis state store needs
the key (at least 32 characters, the same for every process serving one app); the embedded
store is a private file of one process (0600) and is not signed.

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
