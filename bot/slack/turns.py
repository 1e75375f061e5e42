"""What each workspace refused once (streaming, the assistant status line), and the turn
each thread is running now (who asked, who stopped it)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

log = logging.getLogger(__name__)

# Errors that say "not here, not now or later": anything else (rate limits, a hiccup)
# only sends this one run down the fallback path.
_TRANSIENT = {
    "ratelimited",
    "internal_error",
    "fatal_error",
    "request_timeout",
    "service_unavailable",
}


class Capabilities:
    """What each workspace refused once: streaming, the assistant status line, reactions
    (an install without `reactions:write`)."""

    def __init__(self) -> None:
        self._no_stream: dict[str, str] = {}
        self._no_status: dict[str, str] = {}
        self._no_reaction: dict[str, str] = {}

    def reacts(self, team: str) -> bool:
        return team not in self._no_reaction

    def refuse_reaction(self, team: str, error: str) -> None:
        if error in _TRANSIENT or error == "already_reacted":
            return
        if team not in self._no_reaction:
            log.info("reactions are not available in %s (%s)", team, error)
        self._no_reaction[team] = error

    def streams(self, team: str) -> bool:
        return team not in self._no_stream

    def shows_status(self, team: str) -> bool:
        return team not in self._no_status

    def refuse_stream(self, team: str, error: str) -> None:
        if error in _TRANSIENT:
            return
        if team not in self._no_stream:
            log.info("streaming is not available in %s (%s): status messages instead", team, error)
        self._no_stream[team] = error

    def refuse_status(self, team: str, error: str) -> None:
        if error not in _TRANSIENT:
            self._no_status[team] = error


@dataclass
class _Turn:
    asker: str
    stopped_by: str | None = None


class RunningTurns:
    """The turn each session is running now: who asked (they may stop it) and, once
    someone clicked Stop, who."""

    def __init__(self) -> None:
        self._turns: dict[str, _Turn] = {}

    def begin(self, session_id: str, asker: str) -> None:
        self._turns[session_id] = _Turn(asker)

    def end(self, session_id: str) -> None:
        self._turns.pop(session_id, None)

    def asker(self, session_id: str) -> str | None:
        turn = self._turns.get(session_id)
        return None if turn is None else turn.asker

    def mark_stopped(self, session_id: str, by: str | None) -> None:
        turn = self._turns.get(session_id)
        if turn is not None:
            turn.stopped_by = by

    def stopped_by(self, session_id: str) -> str | None:
        turn = self._turns.get(session_id)
        return None if turn is None else turn.stopped_by
