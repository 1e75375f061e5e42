"""Identifiers: quoting that cannot be escaped from, and "did you mean" lists for unknown names."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

_LISTED = 10


def quote_identifier(name: str) -> str:
    """Backtick-quote a name, doubling backticks inside it, so `a`;DROP` stays one name."""
    return "`" + name.replace("`", "``") + "`"


def unknown_name_message(kind: str, name: str, known: Sequence[str]) -> str:
    """ "unknown table 'ordrs'; closest: orders, order_items", or the known names if none is."""
    shown = name if len(name) <= 100 else name[:100] + "…"
    by_lower = {candidate.lower(): candidate for candidate in known}
    close = difflib.get_close_matches(name.lower(), list(by_lower), n=3, cutoff=0.5)
    if close:
        return f"unknown {kind} '{shown}'; closest: {', '.join(by_lower[c] for c in close)}"
    if known:
        listed = ", ".join(known[:_LISTED]) + (", …" if len(known) > _LISTED else "")
        return f"unknown {kind} '{shown}'; known: {listed}"
    return f"unknown {kind} '{shown}'; there are none"
