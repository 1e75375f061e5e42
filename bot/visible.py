"""Text from the model or the database, made safe to show a person who decides on it.

Control and format characters can hide or reorder what a reader sees: a carriage return
or an ANSI escape overwrites a terminal line (``UPDATE t SET a = 1 WHERE id = 7\\r`` …
``OR 1=1`` vanishes), U+061C or U+202E reorders it (``WHERE id < 1000`` displays as
``WHERE id 1000 <``), U+200B or U+00AD makes two different names look alike. ``visible``
turns each such character into a ``<U+XXXX>`` marker, so the text shown is the text that
runs, character for character.

Marked: Unicode categories Cc (controls: ESC, CR, NUL, DEL, C1), Cf (format: soft hyphen,
zero-width space/joiners, bidi marks and embeddings, BOM, tags), Zl and Zp (line and
paragraph separators), lone surrogates (Cs, which a terminal cannot print), and every
bidi control whatever its category. Left alone: newline and tab, which lay text out without
hiding any of it.
"""

from __future__ import annotations

import re
import unicodedata

_KEPT = frozenset("\n\t")
# Cs too: a lone surrogate (a model's JSON may carry "\ud800") cannot even be written to a
# UTF-8 terminal, so it is shown rather than left to fail the whole line.
_MARKED_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
# Bidi controls (all Cf today; listed so a future Unicode version cannot drop one).
_BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)


# Where Cc, Cf, Zl and Zp characters are assigned: the first two planes and the tags
# (plane 14). Scanning only these keeps the import fast.
_PLANES = (range(0x20000), range(0xE0000, 0xE1000))


def _marked_characters() -> str:
    found = [
        char
        for plane in _PLANES
        for char in map(chr, plane)
        if (unicodedata.category(char) in _MARKED_CATEGORIES or char in _BIDI_CONTROLS)
        and char not in _KEPT
    ]
    return "".join(found)


# One character class built once at import (about 400 code points, mostly ranges), so a
# long text is scanned in C: linear in its length.
_MARKED = re.compile("[" + re.escape(_marked_characters()) + "]")


def visible(text: str) -> str:
    """``text`` with every control, format, line/paragraph separator and bidi character
    (newline and tab aside) shown as ``<U+XXXX>``."""
    return _MARKED.sub(_marker, text)


def _marker(match: re.Match[str]) -> str:
    return f"<U+{ord(match.group()):04X}>"
