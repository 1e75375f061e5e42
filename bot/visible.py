"""Text from the model or the database, made safe to show a person who decides on it.

Control and format characters can hide or reorder what a reader sees: a carriage return
or an ANSI escape overwrites a terminal line (``UPDATE t SET a = 1 WHERE id = 7\\r`` …
``OR 1=1`` vanishes), U+061C or U+202E reorders it (``WHERE id < 1000`` displays as
``WHERE id 1000 <``), U+200B or U+00AD makes two different names look alike. ``visible``
turns each such character into a ``<U+XXXX>`` marker, so the text shown is the text that
runs, character for character.

Marked by what a character does on screen, not only by its category:

- always: Unicode categories Cc (controls: ESC, CR, NUL, DEL, C1), Cf (format: soft hyphen,
  zero-width space/joiners, bidi marks and embeddings, BOM, tags), Zl and Zp (line and
  paragraph separators), lone surrogates (Cs, which a terminal cannot print), every bidi
  control whatever its category; every default-ignorable code point (Unicode's
  Default_Ignorable_Code_Point: the Hangul fillers U+115F, U+1160, U+3164, U+FFA0, Khmer's
  inherent vowels U+17B4/U+17B5, the combining grapheme joiner U+034F, the Mongolian
  selectors, the reserved U+2065 and U+FFF0–U+FFF8 — a font draws nothing for them, and
  MariaDB takes several inside an unquoted name, so ``orders<U+3164>`` reads as
  ``orders``); characters that draw a blank or a stand-in (Braille blank U+2800, Khitan
  filler U+16FE4, null notehead U+1D159, U+FFFC, U+FFFD); and marks that draw over their
  neighbours (the overlay class, such as U+0338 and U+20E5, which turn ``=`` into ``≠``; the
  lines U+0332/U+0333 that join characters; every enclosing mark);
- a combining mark standing after a space, a quote, a line's start or another marked
  character: it renders on the blank (or on nothing), so a name or literal looks as if it
  ended before it;
- a variation selector (U+FE00–U+FE0F, U+E0100–U+E01EF) except after a symbol or a
  CJK ideograph, the characters it selects a glyph for (``❤️`` stays as it is): after
  anything else it draws nothing.

Left alone: newline and tab, which lay text out without hiding any of it, and the ordinary
combining marks of every script (``é`` as e + U+0301, Devanagari vowel signs).
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


def _span(first: int, last: int) -> frozenset[str]:
    return frozenset(map(chr, range(first, last + 1)))


_VARIATION_SELECTORS = _span(0xFE00, 0xFE0F) | _span(0xE0100, 0xE01EF)
# Unicode 15's Default_Ignorable_Code_Point, less the variation selectors (their own rule).
_DEFAULT_IGNORABLE = (
    frozenset("\u00ad\u034f\u061c\u3164\ufeff\uffa0")
    | _span(0x115F, 0x1160)
    | _span(0x17B4, 0x17B5)
    | _span(0x180B, 0x180F)
    | _span(0x200B, 0x200F)
    | _span(0x202A, 0x202E)
    | _span(0x2060, 0x206F)
    | _span(0xFFF0, 0xFFF8)
    | _span(0x1BCA0, 0x1BCA3)
    | _span(0x1D173, 0x1D17A)
    | (_span(0xE0000, 0xE0FFF) - _VARIATION_SELECTORS)
)
# Characters that draw a blank, nothing, or a stand-in for something else.
_BLANK_GLYPHS = frozenset("\u2800\U00016fe4\U0001d159\ufffc\ufffd")
# Marks that draw across their neighbours (besides the overlay class and enclosing marks).
_JOINING_LINES = frozenset("\u0332\u0333")

# Where marked characters are assigned: the first two planes and the tags and variation
# selectors (plane 14). Scanning only these keeps the import fast.
_PLANES = (range(0x20000), range(0xE0000, 0xE1000))


def _always_marked(char: str, category: str) -> bool:
    if char in _KEPT:
        return False
    return (
        category in _MARKED_CATEGORIES
        or char in _BIDI_CONTROLS
        or char in _DEFAULT_IGNORABLE
        or char in _BLANK_GLYPHS
        or char in _JOINING_LINES
        or category == "Me"
        or (category == "Mn" and unicodedata.combining(char) == 1)
    )


def _classes() -> tuple[str, str]:
    """(the characters always marked, the combining marks marked where they stand alone)."""
    always: list[str] = []
    marks: list[str] = []
    for plane in _PLANES:
        for char in map(chr, plane):
            category = unicodedata.category(char)
            if _always_marked(char, category):
                always.append(char)
            elif category == "Mn" and char not in _VARIATION_SELECTORS:
                marks.append(char)
    return "".join(always), "".join(marks)


_ALWAYS, _MARKS = _classes()
_SELECTORS = "".join(sorted(_VARIATION_SELECTORS))
# What a variation selector may follow: a symbol (emoji) or a CJK ideograph.
_SELECTABLE = (
    "\u00a9\u00ae\u203c\u2049\u2122-\u2bff\u3000-\u9fff\uf900-\ufaff"
    "\U0001f000-\U0001faff\U00020000-\U0003134f"
)
# After these a combining mark has nothing visible to sit on.
_BARE = r"\s'\"`" + re.escape(_ALWAYS)

# One expression built once at import (character classes of ranges), so a long text is
# scanned in C: linear in its length.
_MARKED = re.compile(
    f"[{re.escape(_ALWAYS)}]"
    f"|(?:^|(?<=[{_BARE}]))[{re.escape(_MARKS)}{re.escape(_SELECTORS)}]+"
    f"|(?<![{_SELECTABLE}])[{re.escape(_SELECTORS)}]"
)


def visible(text: str) -> str:
    """``text`` with every character that renders blank, hides, overlays or reorders what a
    reader sees (newline and tab aside) shown as ``<U+XXXX>``."""
    return _MARKED.sub(_marker, text)


def _marker(match: re.Match[str]) -> str:
    return "".join(f"<U+{ord(char):04X}>" for char in match.group())
