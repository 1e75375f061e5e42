"""Identifier quoting: whatever the name holds, it stays one name."""

from __future__ import annotations

import pytest

from bot.db.names import quote_identifier

# (name, quoted, why)
QUOTED = [
    ("orders", "`orders`", "a plain name"),
    ("order items", "`order items`", "spaces stay inside"),
    ("we`ird", "`we``ird`", "a backtick is doubled, so it cannot close the quote"),
    ("x`; DROP TABLE t; --", "`x``; DROP TABLE t; --`", "an injection attempt stays a name"),
    ("`", "````", "a lone backtick"),
]


@pytest.mark.parametrize(("name", "quoted", "reason"), QUOTED, ids=[r[2] for r in QUOTED])
def test_identifiers_are_quoted_safely(name: str, quoted: str, reason: str) -> None:
    assert quote_identifier(name) == quoted
