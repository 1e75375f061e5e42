"""The classification carries the lexer's cut of its SQL, and the facts read from it are the
facts a second cut of the text would give: the guard, the card and the run read them from the
classification instead of cutting the text again. A statement built by hand (no cut carried)
has the same facts, read from its text."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bot.sql.lexical import (
    first_foreign_space,
    has_executable_comment,
    rewritten_differently,
    split,
)
from bot.sql.risk import classify
from bot.sql.roles import switches_role

CASES = [
    # (sql, what the row is about)
    ("SELECT 1", "a plain read"),
    ("UPDATE t SET a = 1 WHERE id = 2", "a plain write"),
    ("SELECT 1; UPDATE t SET a = 1 WHERE id = 2", "a script: one cut per statement"),
    ("  UPDATE t SET a = 1 WHERE id = 2 ;\n", "the server's whitespace and ';' around it"),
    ("UPDATE t SET a = 0x41 WHERE id = 2", "a 0x… number: rebuilt SQL would mean otherwise"),
    ("SELECT 1; DELETE FROM t WHERE id = 0x10", "a 0x… number in the second statement"),
    ("UPDATE t SET a = '0x41' WHERE id = 2", "0x… inside a literal is not a number"),
    ("UPDATE t SET a = 1 WHERE id = 1 /*! OR 1 = 1 */", "an executable comment"),
    ("UPDATE t SET a = 1 /* plain */ WHERE id = 1", "an ordinary comment runs nothing"),
    ("SELECT 1; /*M!100100 DELETE FROM t */", "a MariaDB executable comment alone"),
    ("UPDATE t\u00a0SET a = 1", "a no-break space outside quotes"),
    ("SELECT 1; SELECT 'a\u00a0b'; UPDATE t\u2003SET a = 1", "a foreign space after a quoted one"),
    ("SET ROLE admin", "SET ROLE"),
    ("SELECT 1; SET DEFAULT ROLE admin", "SET DEFAULT ROLE in a script"),
    ("/*!SET ROLE admin*/", "SET ROLE in an executable comment"),
    ("SELECT 'SET ROLE admin'", "SET ROLE in a literal is no role switch"),
    ("", "no statement at all"),
    ("-- nothing\n", "only a comment"),
]


@pytest.mark.parametrize(("sql", "why"), CASES, ids=[why for _, why in CASES])
def test_the_facts_carried_are_the_facts_a_second_cut_gives(sql: str, why: str) -> None:
    classification = classify(sql)
    assert classification.pieces == tuple(split(sql))
    assert classification.foreign_space == first_foreign_space(sql)
    assert switches_role(classification.pieces) is switches_role(sql)
    for statement in classification.statements:
        assert statement.executable_comment is has_executable_comment(statement.text)
        assert statement.rewritten == rewritten_differently(statement.text)


@pytest.mark.parametrize(("sql", "why"), CASES, ids=[why for _, why in CASES])
def test_a_statement_built_without_its_cut_reads_the_same_facts_from_its_text(
    sql: str, why: str
) -> None:
    classification = classify(sql)
    bare = replace(
        classification,
        statements=tuple(replace(s, piece=None) for s in classification.statements),
    )
    assert bare.pieces == classification.pieces
    assert bare.foreign_space == classification.foreign_space
    for carried, read in zip(classification.statements, bare.statements, strict=True):
        assert read.piece is None
        assert (read.executable_comment, read.rewritten) == (
            carried.executable_comment,
            carried.rewritten,
        )
