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
    # What renders blank or draws over its neighbours, whatever its category.
    ("\u115f", "HANGUL CHOSEONG FILLER (Lo) draws nothing"),
    ("\u1160", "HANGUL JUNGSEONG FILLER (Lo) draws nothing"),
    ("\u3164", "HANGUL FILLER: MariaDB takes it in a name, orders<U+3164> reads as orders"),
    ("\uffa0", "HALFWIDTH HANGUL FILLER"),
    ("\U00016fe4", "KHITAN SMALL SCRIPT FILLER"),
    ("\u2800", "BRAILLE PATTERN BLANK (So) is a blank"),
    ("\U0001d159", "MUSICAL SYMBOL NULL NOTEHEAD draws nothing"),
    ("\u034f", "COMBINING GRAPHEME JOINER, default-ignorable"),
    ("\u0332", "COMBINING LOW LINE joins characters into one underline"),
    ("\u0333", "COMBINING DOUBLE LOW LINE"),
    ("\u0338", "COMBINING LONG SOLIDUS OVERLAY turns = into what reads as ≠"),
    ("\u0334", "COMBINING TILDE OVERLAY, the overlay class"),
    ("\u20d2", "COMBINING LONG VERTICAL LINE OVERLAY"),
    ("\u20e5", "COMBINING REVERSE SOLIDUS OVERLAY"),
    ("\u20dd", "COMBINING ENCLOSING CIRCLE draws around its neighbour (Me)"),
    ("\u17b4", "KHMER VOWEL INHERENT AQ, default-ignorable"),
    ("\u17b5", "KHMER VOWEL INHERENT AA, default-ignorable"),
    ("\u180b", "MONGOLIAN FREE VARIATION SELECTOR ONE"),
    ("\u180f", "MONGOLIAN FREE VARIATION SELECTOR FOUR"),
    ("\u2065", "reserved default-ignorable"),
    ("\ufff0", "reserved default-ignorable in Specials"),
    ("\ufffc", "OBJECT REPLACEMENT CHARACTER stands in for something else"),
    ("\ufffd", "REPLACEMENT CHARACTER stands in for bytes that are not shown"),
    ("\U0001bca0", "SHORTHAND FORMAT LETTER OVERLAP"),
    ("\U0001d173", "MUSICAL SYMBOL BEGIN BEAM"),
    ("\U000e0001", "LANGUAGE TAG"),
    ("\U000e0fff", "the end of the tags' default-ignorable block"),
    *[
        (chr(code), f"VARIATION SELECTOR-{code - 0xFE00 + 1} after a letter draws nothing")
        for code in range(0xFE00, 0xFE10)
    ],
    ("\U000e0100", "VARIATION SELECTOR-17, the supplement"),
    ("\U000e01ef", "VARIATION SELECTOR-256"),
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
    ("e\u0301", "an accent as a combining mark on its letter"),
    ("Tie\u0302\u0301ng Vie\u0323\u0302t", "stacked combining marks on their letters"),
    ("नमस्ते", "Devanagari's vowel signs and virama"),
    ("ภาษาไทย", "Thai's combining vowels"),
    ("مَرْحَبًا", "Arabic's harakat"),
    ("한국어", "Hangul syllables"),
    ("❤\ufe0f", "VS16 after an emoji selects its picture"),
    ("\u2764\ufe0e", "VS15 after a symbol selects its text form"),
    ("\u845b\U000e0100", "an ideographic variation selector after a Han ideograph"),
    ("©\ufe0f", "the emoji form of ©"),
    ("≠ ≤ ≥", "precomposed relations are letters of their own"),
    ("SELECT id FROM orders WHERE total > 10", "ordinary SQL"),
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


# (text, what is shown, why): a combining mark is marked where it has nothing to sit on.
STANDING_ALONE = [
    ("\u0301x", "<U+0301>x", "at the start"),
    ("a \u0301b", "a <U+0301>b", "after a space"),
    ("'\u0301'", "'<U+0301>'", "after a quote: a literal looks empty"),
    ('"\u0301"', '"<U+0301>"', "after a double quote"),
    ("`\u0301`", "`<U+0301>`", "after a backquote: a name looks empty"),
    ("a\n\u0301", "a\n<U+0301>", "at a line's start"),
    ("a\u200b\u0301", "a<U+200B><U+0301>", "after a marked character"),
    ("a \u0301\u0302", "a <U+0301><U+0302>", "a run of them"),
    (
        "1\ufe0f\u20e3",
        "1<U+FE0F><U+20E3>",
        "a keycap's selector after a digit, and its enclosing mark",
    ),
]


@pytest.mark.parametrize(
    ("text", "expected", "why"), STANDING_ALONE, ids=[r[-1] for r in STANDING_ALONE]
)
def test_a_combining_mark_with_nothing_to_sit_on_is_marked(
    text: str, expected: str, why: str
) -> None:
    assert visible(text) == expected, why


def test_every_combining_mark_after_a_space_is_marked() -> None:
    missed = [
        f"U+{code:04X}"
        for code in range(sys.maxunicode + 1)
        if unicodedata.category(chr(code)) in ("Mn", "Me")
        and visible(" " + chr(code)) == " " + chr(code)
    ]
    assert missed == []
