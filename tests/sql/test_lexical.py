"""The lexer: where statements end, and what the checks and the parser get to read."""

from __future__ import annotations

import pytest

from bot.sql.lexical import (
    SQL_WHITESPACE,
    split,
    statement_text,
    statement_texts,
    trim_sql,
    unwrap_executable_comments,
)


def test_code_blanks_comments_and_keeps_literals() -> None:
    (piece,) = split("SELECT 'x' /* c */ -- d\n, `y`")
    assert piece.code == "SELECT 'x'" + " " * 9 + " " * 4 + "\n, `y`"
    assert piece.masked == "SELECT ' '" + " " * 9 + " " * 4 + "\n, ` `"


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 'a' FROM t",
        "SELECT 'it''s', \"q\"\"q\", `b``c` FROM t # x",
        "SELECT 1 /* a */ + /*! 2 */ 3 -- tail",
        "SELECT 'é', `日本` FROM t",
    ],
)
def test_text_code_and_masked_line_up_character_for_character(sql: str) -> None:
    for piece in split(sql):
        assert len(piece.text) == len(piece.code) == len(piece.masked)
        assert sql[piece.start : piece.end] == piece.text


@pytest.mark.parametrize(
    ("sql", "problem"),
    [
        ("SELECT 'abc", "literal is never closed"),
        ('SELECT "abc', "literal is never closed"),
        ("SELECT `abc", "identifier is never closed"),
        ("SELECT 1 /* abc", "comment is never closed"),
        ("SELECT 'it\\'s'", "backslash-escaped quote"),
        ('SELECT "say \\"hi\\""', "backslash-escaped quote"),
    ],
)
def test_lexical_problems_are_reported_not_guessed(sql: str, problem: str) -> None:
    (piece,) = split(sql)
    assert any(problem in reported for reported in piece.problems)


@pytest.mark.parametrize("sql", ["SELECT 'it''s'", "SELECT 'a\\\\'", "SELECT 'a\\nb'"])
def test_unambiguous_literals_raise_no_problem(sql: str) -> None:
    (piece,) = split(sql)
    assert piece.problems == ()


def test_a_statement_of_only_an_executable_comment_is_kept() -> None:
    (piece,) = split("/*!40101 SET NAMES utf8 */")
    assert piece.executable_comment
    assert piece.code.isspace()


def test_optimizer_hints_are_ordinary_comments() -> None:
    (piece,) = split("SELECT /*+ NO_ICP(t) */ 1")
    assert not piece.executable_comment


@pytest.mark.parametrize(
    ("text", "unwrapped"),
    [
        ("/*!40101 SET NAMES utf8 */", "         SET NAMES utf8   "),
        ("SELECT /*M!100100 1 */", "SELECT            1   "),
        ("SELECT /*! '*/' */", "SELECT     '*/'   "),
        ("SELECT 1 /* ordinary */", "SELECT 1 /* ordinary */"),
    ],
)
def test_unwrapping_keeps_the_content_of_executable_comments(text: str, unwrapped: str) -> None:
    assert unwrap_executable_comments(text) == unwrapped
    assert len(unwrap_executable_comments(text)) == len(text)


def test_double_dash_needs_a_space_to_start_a_comment() -> None:
    assert [piece.text for piece in split("SELECT 1--1;SELECT 2")] == ["SELECT 1--1", "SELECT 2"]
    assert [piece.text for piece in split("SELECT 1 -- 1;SELECT 2")] == ["SELECT 1 -- 1;SELECT 2"]


def test_block_comments_do_not_nest() -> None:
    (piece,) = split("SELECT 1 /* /* */ + 2")
    assert piece.code.split() == ["SELECT", "1", "+", "2"]


# (text, the statements the server must receive, why): the server's whitespace is only ASCII
# space, tab, LF, CR, FF and VT; every other space is part of a name.
CUTS = [
    ("DROP TABLE rt_x\u00a0", ["DROP TABLE rt_x\u00a0"], "a no-break space ends the name"),
    (" \t\r\n\f\vSELECT 1 \t\r\n\f\v", ["SELECT 1"], "the six ASCII blanks are trimmed"),
    ("\u2003SELECT 1\u2003", ["\u2003SELECT 1\u2003"], "an em space is not whitespace to MariaDB"),
    ("\u3000DROP TABLE t", ["\u3000DROP TABLE t"], "an ideographic space neither"),
    (
        "DROP TABLE a\u2028; DROP TABLE b\x85",
        ["DROP TABLE a\u2028", "DROP TABLE b\x85"],
        "nor U+2028 and NEL",
    ),
    ("SELECT 1;\n SELECT 2 ;", ["SELECT 1", "SELECT 2"], "cut at code semicolons, trimmed"),
    ("SELECT ';' ; -- only a comment", ["SELECT ';'"], "a comment-only tail is no statement"),
    ("\ufeffSELECT 1", ["\ufeffSELECT 1"], "a byte order mark is kept, not silently dropped"),
]


@pytest.mark.parametrize(("sql", "texts", "why"), CUTS, ids=[why for *_, why in CUTS])
def test_statements_are_cut_and_trimmed_by_the_servers_rules(
    sql: str, texts: list[str], why: str
) -> None:
    assert statement_texts(sql) == texts
    assert [piece.text for piece in split(sql)] == texts


def test_the_servers_whitespace_is_six_ascii_characters() -> None:
    assert sorted(SQL_WHITESPACE) == sorted(" \t\n\r\f\v")
    assert trim_sql("\u00a0 x \u00a0") == "\u00a0 x \u00a0"
    assert trim_sql("\r\n x \t") == "x"


@pytest.mark.parametrize(
    ("sql", "sent", "why"),
    [
        ("DROP TABLE rt_x\u00a0;\n", "DROP TABLE rt_x\u00a0", "one statement: its exact text"),
        (" ; -- nothing", "", "no statement: nothing to send"),
        ("SELECT 1; DROP TABLE t", "SELECT 1; DROP TABLE t", "several stay whole for the server"),
    ],
)
def test_statement_text_is_what_the_executor_sends(sql: str, sent: str, why: str) -> None:
    assert statement_text(sql) == sent


def test_statement_text_of_a_judged_statement_is_the_statement_itself() -> None:
    for piece in split("SELECT 1 -- c\n; /* x */ UPDATE t SET a = '\u00a0' ;\u00a0"):
        assert statement_text(piece.text) == piece.text
