"""The preview table of a query result."""

from __future__ import annotations

from bot.agent.outcomes import QueryResult
from bot.slack.blocks.result_preview import PREVIEW_ROWS, preview_message, preview_table, title


def result(rows: int = 3, *, truncated: bool = False, columns: int = 3) -> QueryResult:
    names = ("id", "customer", "total", *(f"extra_{i}" for i in range(columns - 3)))
    return QueryResult(
        database="shop-staging",
        sql="SELECT …",
        columns=names[:columns],
        rows=tuple(
            (i, f"customer <{i}> & co", i * 1.5, *(f"value {j}" * 5 for j in range(columns - 3)))[
                :columns
            ]
            for i in range(rows)
        ),
        truncated=truncated,
    )


def preview_text(query_result: QueryResult) -> str:
    return preview_message(query_result)["blocks"][0]["text"]["text"]


def test_the_title_names_the_database_and_rows_and_marks_truncation() -> None:
    assert title(result(50, truncated=True)) == "shop-staging — 50 rows (truncated)"
    assert title(result(1)) == "shop-staging — 1 row"


def test_the_preview_is_a_code_block_of_the_first_rows() -> None:
    text = preview_text(result(50, truncated=True))
    assert "*shop-staging* — 50 rows (truncated" in text
    assert f"first {PREVIEW_ROWS} shown" in text
    code = text.split("```")[1]
    assert code.count("\n") == PREVIEW_ROWS + 3  # header, rule, rows, and the fence lines
    assert "customer &lt;0&gt; &amp; co" in code


def test_the_preview_aligns_columns_and_right_aligns_numbers() -> None:
    table, hidden = preview_table(result(12), rows=12)
    lines = table.split("\n")
    assert hidden == 0
    # The last column holds numbers, right-aligned: every line ends at the same place.
    assert len({len(line) for line in lines}) == 1
    assert lines[2].startswith(" 0  customer")
    assert lines[-1].startswith("11  customer") and lines[-1].endswith("16.5")


def test_wide_results_show_the_columns_that_fit_and_say_how_many_are_left() -> None:
    text = preview_text(result(3, columns=12))
    assert "more columns in the CSV" in text
    assert all(len(line) <= 110 for line in text.split("```")[1].split("\n"))


def test_long_cells_are_cut_in_the_preview() -> None:
    long = QueryResult("db", "SELECT", ("note",), (("x" * 500,),), False)
    table, _ = preview_table(long)
    assert "x" * 29 + "…" in table and "x" * 31 not in table


def test_backticks_cannot_end_the_code_block() -> None:
    tricky = QueryResult("db", "SELECT", ("a",), (("```<!channel>```",),), False)
    text = preview_text(tricky)
    assert text.count("```") == 2
    assert "<!channel>" not in text


def test_the_preview_fits_a_section_whatever_the_data() -> None:
    huge = QueryResult(
        "db",
        "SELECT",
        tuple(f"c{i}" for i in range(40)),
        tuple(tuple("&" * 200 for _ in range(40)) for _ in range(50)),
        False,
    )
    assert len(preview_text(huge)) <= 3_000


def test_an_empty_result_says_so() -> None:
    text = preview_text(QueryResult("db", "SELECT", ("a",), (), False))
    assert "0 rows" in text
