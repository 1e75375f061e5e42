"""visible(): what a person deciding on text sees is every character of it."""

from __future__ import annotations

import sys
import unicodedata

import pytest

from bot.visible import visible

# (character, why it must be shown): the invisible and format characters of the review, and
# the other classes of Cc, Cf, Zl, Zp and bidi controls.
MARKED = [
    ("\u061c", "ARABIC LETTER MARK reorders what follows (WHERE id < 1000 reads id 1000 <)"),
    ("\u200e", "LEFT-TO-RIGHT MARK, a bidi control"),
    ("\u200f", "RIGHT-TO-LEFT MARK, a bidi control"),
    ("\u202a", "LEFT-TO-RIGHT EMBEDDING"),
    ("\u202b", "RIGHT-TO-LEFT EMBEDDING"),
    ("\u202c", "POP DIRECTIONAL FORMATTING"),
    ("\u202d", "LEFT-TO-RIGHT OVERRIDE"),
    ("\u202e", "RIGHT-TO-LEFT OVERRIDE reverses the text after it"),
    ("\u2066", "LEFT-TO-RIGHT ISOLATE"),
    ("\u2067", "RIGHT-TO-LEFT ISOLATE"),
    ("\u2068", "FIRST STRONG ISOLATE"),
    ("\u2069", "POP DIRECTIONAL ISOLATE"),
    ("\u00ad", "SOFT HYPHEN is invisible inside a name"),
    ("\u200b", "ZERO WIDTH SPACE makes two names look alike"),
    ("\u200c", "ZERO WIDTH NON-JOINER"),
    ("\u200d", "ZERO WIDTH JOINER"),
    ("\u2060", "WORD JOINER"),
    ("\ufeff", "BYTE ORDER MARK / zero width no-break space"),
    ("\u180e", "MONGOLIAN VOWEL SEPARATOR (Cf)"),
    ("\U000e0041", "a TAG character hides text in plain sight"),
    ("\x1b", "ESC starts ANSI sequences that rewrite a terminal line"),
    ("\r", "CARRIAGE RETURN overwrites the line on a terminal"),
    ("\x00", "NUL truncates text in C-based viewers"),
    ("\x08", "BACKSPACE erases the character before it"),
    ("\x7f", "DELETE, a control"),
    ("\x85", "NEXT LINE, a C1 control"),
    ("\x9b", "CSI, the one-byte ANSI escape"),
    ("\x0b", "VERTICAL TAB"),
    ("\x0c", "FORM FEED"),
    ("\u2028", "LINE SEPARATOR (Zl) breaks a line where no newline is seen"),
    ("\u2029", "PARAGRAPH SEPARATOR (Zp)"),
    ("\ud800", "a lone surrogate cannot be printed at all"),
]


@pytest.mark.parametrize(("char", "why"), MARKED, ids=[why for _, why in MARKED])
def test_every_hiding_character_becomes_a_marker(char: str, why: str) -> None:
    assert visible(f"a{char}b") == f"a<U+{ord(char):04X}>b"


KEPT = [
    ("\n", "a newline lays text out without hiding any"),
    ("\t", "a tab lays text out without hiding any"),
    (" ", "a space"),
    ("\u00a0", "a no-break space is a visible blank (Zs), not a format character"),
    ("é", "letters beyond ASCII"),
    ("日本", "any script"),
    ("<U+0041>", "a marker already shown stays as it is"),
]


@pytest.mark.parametrize(("text", "why"), KEPT, ids=[why for _, why in KEPT])
def test_ordinary_text_is_left_alone(text: str, why: str) -> None:
    assert visible(text) == text


def test_every_character_of_the_marked_categories_is_marked() -> None:
    missed = [
        f"U+{code:04X}"
        for code in range(sys.maxunicode + 1)
        if unicodedata.category(chr(code)) in ("Cc", "Cf", "Zl", "Zp")
        and chr(code) not in "\n\t"
        and visible(chr(code)) == chr(code)
    ]
    assert missed == []


def test_a_reordering_mark_is_shown_where_it_stands() -> None:
    assert visible("WHERE id <\u061c 1000") == "WHERE id <<U+061C> 1000"


def test_a_long_text_is_marked_in_linear_time() -> None:
    text = ("SELECT 1\u200b\r\n" * 100_000)[:1_000_000]
    assert visible(text).count("<U+200B>") == text.count("\u200b")
