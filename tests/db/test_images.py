"""Values kept for Undo come back from the state store equal to what the driver returned."""

from __future__ import annotations

import datetime
from decimal import Decimal

import pytest

from bot.db.images import decode_value, encode_value

VALUES = [
    None,
    True,
    42,
    "text",
    0.1,
    Decimal("20.00"),
    b"\x00\xff",
    datetime.datetime(2026, 1, 2, 3, 4, 5, 6),
    datetime.date(2026, 1, 2),
    datetime.time(3, 4, 5),
    datetime.timedelta(hours=-1, microseconds=5),
]


@pytest.mark.parametrize("value", VALUES, ids=[type(v).__name__ for v in VALUES])
def test_a_kept_value_comes_back_equal(value: object) -> None:
    back = decode_value(encode_value(value))
    assert back == value and type(back) is type(value)
