"""SQL risk classifier: how much can a MySQL/MariaDB statement change? It fails closed.

Risk classes, ordered: read_only < write < ddl < transaction; several statements take the
highest. A statement is read_only only when it is positively recognised as one — anything
not understood is at least a write.

How a statement is judged (bot/sql/…):

1. lexical.py splits the text at semicolons that are code (not inside literals, quoted
   identifiers or comments) with exact spans, and produces a copy with comments blanked (for
   the parser) and one with literals and identifiers blanked too (for keyword checks).
2. statements/ dispatches on the leading keyword (dispatch.py), to one module per family of
   statements (dml, explain, ddl, programs, settings, transactions, admin). Queries go to
   queries.py: a lexical scan for the clauses and calls that make a query act (INTO, locking
   clauses, side-effect or unknown functions, :=, NEXT VALUE FOR …), then a sqlglot parse
   that must yield a query. UPDATE and DELETE are parsed for their targets (aliases, joins);
   INSERT and REPLACE name theirs up front. DDL, SET, transaction control and admin
   statements are judged from their keywords, because the parser adds nothing there (it falls
   back to an opaque Command, or misreads them: START SLAVE as a transaction, SHUTDOWN as a
   column).

Design choices:

- Executable comments (``/*! … */``, ``/*!50700 … */``, ``/*M! … */``, ``/*M!100100 … */``):
  the server runs their content, whatever the version number says on another server. A
  statement holding one is judged twice — with the comment as a comment, and with the
  markers removed and the content in place (version numbers ignored) — and gets the higher
  risk of the two, and never less than write. So mysqldump's ``SELECT /*!40001 SQL_NO_CACHE */
  * FROM t`` is a write (fail closed; it is rare in hand-written SQL), while
  ``/*!40101 SET NAMES utf8 */`` is judged as the SET it is and ``/*! DROP TABLE t */`` as
  DDL. Judging both readings matters because a comment's content can also hide text:
  ``/*!99999 -- */ DROP TABLE t`` runs DROP TABLE on a server that skips the comment.
- Optimizer hints ``/*+ … */`` are ordinary comments.
- EXPLAIN (and DESCRIBE/DESC of a statement) is judged like the statement it explains:
  ``EXPLAIN SELECT …`` is read_only, ``EXPLAIN UPDATE …`` is a write, although MySQL does not
  run it — the optimizer may still evaluate constant subqueries and functions while
  planning, and a single rule cannot be gamed. EXPLAIN ANALYZE and MariaDB's
  ``ANALYZE <statement>`` run the statement: at least write. DESCRIBE t / SHOW are read_only.
- SET is never read_only: write, or transaction for SET TRANSACTION and for variables that
  change transaction handling or the read-only session (autocommit, completion_type,
  transaction_read_only/tx_read_only, transaction_isolation/tx_isolation), however they are
  written: a quoted identifier is the same name (`` `autocommit` ``, ``@@session.`autocommit` ``),
  and SET STATEMENT's variable list is checked too. SET PASSWORD and
  SET DEFAULT ROLE are account DDL. LOCK/UNLOCK TABLES are transaction control (MySQL files
  them there: they commit and hold locks for the session). A default or enforced storage
  engine that is not a known local one (``default_storage_engine = CONNECT``) reaches the
  whole server, like ENGINE=CONNECT.
- OPTIMIZE, ANALYZE, REPAIR and CHECK TABLE are DDL: the server commits any open
  transaction before them, so inside an approved call they would commit what ran before.
- A Unicode space outside quotes (U+00A0, U+2000…, U+3000, and the ASCII separators
  U+001C-U+001F) is part of a name to the server but whitespace to the parser: the names
  read do not hold, so the statement is at least a write that reaches the whole server.
- PREPARE s FROM '…' and EXECUTE IMMEDIATE '…' are judged by the statement in the literal (at
  least write); from a variable the statement is invisible, so they get transaction, the
  highest risk. EXECUTE s is a write: what it runs was judged when it was prepared.
- Functions: a call is read-only only when it names a built-in without side effects, spelt
  the way MariaDB 10.11 resolves to that built-in (functions.py, verified on the server):
  unquoted, unqualified, with "(" right after the name. A space or comment before "("
  (``SUM (x)``) makes the server look for a stored function of that name, and so does a
  quoted name for most built-ins (`` `sum`(x) ``); both are writes, except after reserved and
  keyword-only words (``IN (``, ``OVER (``, ``IF (``). Names that are built-ins on MySQL only
  (ANY_VALUE, BIN_TO_UUID, …) call stored functions on MariaDB and are unknown here. Every
  ``name (`` is a call unless the parse tree has a CTE or derived-table name with a column
  list at exactly that position; a table or alias elsewhere with the called name excuses
  nothing. LASTVAL / PREVIOUS VALUE FOR, IS_FREE_LOCK / IS_USED_LOCK, UUID_SHORT and
  LAST_INSERT_ID only read (session-local) values and stay read_only (but the sequence a
  name-taking function names is one of its reads, and a named lock reaches the whole
  server); NEXTVAL / SETVAL / NEXT VALUE FOR, GET_LOCK / RELEASE_LOCK / RELEASE_ALL_LOCKS,
  SLEEP, BENCHMARK, LOAD_FILE and the replication waits are writes, quoted or not.
  ``SELECT @v := …`` assigns a user variable: a write, like SET.
- A literal with a backslash-escaped quote (``'it\\'s'``) is read differently when the
  server's sql_mode has NO_BACKSLASH_ESCAPES (or ANSI_QUOTES for "…"), so it makes a
  statement at least a write; ``'it''s'`` is unambiguous and fine.

Targets (TableRef) are what a statement writes or alters, for the guard's own-schema rule.
When a write's targets cannot be resolved with certainty, every table it references is
reported, as written: over-reporting only makes the guard stricter.

- ``TableRef(schema_or_None, table)`` for tables, views, sequences, routines, triggers and
  events, exactly as written (``UPDATE other.t`` -> ``TableRef("other", "t")``,
  ``INSERT INTO t`` -> ``TableRef(None, "t")``): unquoted, never case-folded — whether
  ``SHOP`` and ``shop`` are one schema is the server's lower_case_table_names to say.
  Multi-table UPDATE/DELETE report the tables actually written when aliases resolve
  (an alias or name matching in any case: both readings of lower_case_table_names), else
  every table in the statement's table references, parenthesised ones included (a
  superset). A locking read reports the tables it locks.
- What a statement reaches besides its object: routines it calls by a qualified name
  (``other.f()``) and sequences it advances (``NEXTVAL(other.s)``) in any write; what a
  trigger's, event's, procedure's or function's body writes (the body is judged as the
  statement it is, and the program is at least as risky as its body); the tables a view
  reads (UPDATE on the view writes them); a MERGE table's UNION list; every other table an
  ALTER TABLE clause names (RENAME, EXCHANGE PARTITION … WITH TABLE, CONVERT PARTITION … TO
  TABLE, CONVERT TABLE … TO PARTITION) and the parent table of a FOREIGN KEY … REFERENCES.
- ``TableRef(schema, "")`` for a whole schema: CREATE/ALTER/DROP DATABASE x and USE x
  (``TableRef("x", "")``; ``ALTER DATABASE`` without a name is ``TableRef(None, "")``).
- ``TableRef("*", "*")`` for the whole server, as MySQL writes it in GRANT … ON *.*:
  accounts, roles and privileges (CREATE/ALTER/DROP/RENAME USER, GRANT, REVOKE,
  SET PASSWORD), servers, tablespaces, plugins, loadable functions, global SET, KILL, FLUSH,
  RESET, PURGE, SHUTDOWN and replication control; the file system (SELECT … INTO
  OUTFILE/DUMPFILE, LOAD DATA [LOCAL] INFILE, LOAD_FILE, DATA/INDEX DIRECTORY); tables
  whose engine keeps the data elsewhere (FEDERATED, CONNECT, SPIDER, CONNECTION='…'; the
  engine's name quoted or not); and stored programs whose body is a compound statement
  (BEGIN … END, IF, loops), which is not checked statement by statement here, or whose body
  runs dynamic SQL (PREPARE, EXECUTE, EXECUTE IMMEDIATE), controls transactions or cannot
  be judged. A guard comparing schemas sees "*" as foreign to every
  database, so these are refused rather than sent for approval.

Reads (``Statement.reads``) are the tables and views a statement reads, as written: FROM,
joins, subqueries anywhere (SET, DO, CALL arguments, SHOW … WHERE), SHOW … FROM/IN and SHOW
CREATE, DESCRIBE, INSERT … SELECT's source, CREATE TABLE … LIKE/SELECT, and what views and
stored-program bodies read. ``TableRef(schema, "")`` is a whole schema (SHOW TABLES FROM
x); ``information_schema.PROCESSLIST`` is what SHOW PROCESSLIST reads; ``TableRef("*",
"*")`` is a read that cannot be bounded (a query the parser cannot read, binary-log events,
another account's grants). Calls (``Statement.calls``) are the stored routines a
statement runs — CALL p and stored functions f(), other.f() — for the guard to read their
bodies from the server and judge them with bot.sql.routines.classify_routine_body.

Known limits: a view or trigger that already exists can hide a stored-function call (the
READ ONLY session the bot runs reads in stops it writing tables), and UPDATE on an existing
view over another schema's table reports only the view; statements are split by the bot and
run one by one, so the connection must not enable multi-statements. The function lists
follow MariaDB 10.11; on MySQL a MariaDB-only built-in name could be a stored function.

Cost: time is linear in the input — 40-120 µs per short statement (50,000 statements take
2-6 s), and linear in a statement's length except inside sqlglot's own parse of one huge
query. It runs synchronously; callers with large inputs run it in a thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum


class Risk(StrEnum):
    """How much a statement can change. Ordered: read_only < write < ddl < transaction."""

    READ_ONLY = "read_only"
    WRITE = "write"
    DDL = "ddl"
    TRANSACTION = "transaction"

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK = {Risk.READ_ONLY: 0, Risk.WRITE: 1, Risk.DDL: 2, Risk.TRANSACTION: 3}


@dataclass(frozen=True, slots=True)
class TableRef:
    """A table (or database, for CREATE/DROP DATABASE) a statement writes or alters."""

    schema: str | None
    name: str


@dataclass(frozen=True, slots=True)
class Statement:
    text: str  # the statement's exact source text, without the separating ';'
    start: int  # offsets into the classified string: sql[start:end] == text
    end: int
    risk: Risk
    kind: str  # leading keywords, upper case: "SELECT", "INSERT", "CREATE TABLE", "UNKNOWN"
    reasons: tuple[str, ...]
    targets: tuple[TableRef, ...]  # what it writes or alters; empty for reads
    # Tables and views it reads (FROM, joins, subqueries, SHOW … FROM, DESCRIBE, the source of
    # INSERT … SELECT), as written; TableRef("*", "*") when what it reads cannot be bounded.
    reads: tuple[TableRef, ...] = ()
    # Stored routines it runs: CALL p, and stored functions it calls (f(), other.f()), named
    # as the server resolves them (unquoted; schema None means the default database).
    calls: tuple[TableRef, ...] = ()
    # The statement as the lexer cut it (text, comment-blanked code, literal-masked copy), so
    # that what is read from its text later is read from this cut, not from a second one.
    # None for a statement built by hand; its facts are then read from `text`.
    piece: Piece | None = field(default=None, compare=False, repr=False)

    @property
    def executable_comment(self) -> bool:
        """Whether it holds a /*! … */ or /*M! … */ comment the server may run."""
        if self.piece is not None:
            return self.piece.executable_comment
        return "/*" in self.text and has_executable_comment(self.text)

    @property
    def rewritten(self) -> str:
        """Why SQL rebuilt from the parse of this statement would not mean what it means
        (bot.sql.lexical.rewrite_problem), or ""."""
        if self.piece is not None:
            return rewrite_problem(self.piece)
        return rewritten_differently(self.text)


@dataclass(frozen=True, slots=True)
class Classification:
    sql: str
    risk: Risk  # the highest risk of its statements
    statements: tuple[Statement, ...]
    reasons: tuple[str, ...]

    @property
    def is_read_only(self) -> bool:
        return self.risk is Risk.READ_ONLY

    @property
    def pieces(self) -> tuple[Piece, ...]:
        """The statements as the lexer cut `sql`: the cut classify made (carried by each
        statement), else `sql` cut now."""
        carried = tuple(s.piece for s in self.statements if s.piece is not None)
        if len(carried) == len(self.statements):
            return carried
        return tuple(split(self.sql))

    @property
    def foreign_space(self) -> str | None:
        """The first character outside quotes that the parser takes for a space while the
        server reads it as part of a name (bot.sql.lexical.foreign_space), or None."""
        if not self.statements or any(s.piece is None for s in self.statements):
            return first_foreign_space(self.sql)
        if not may_hold_foreign_space(self.sql):
            return None  # the common case: one search of the text
        for piece in self.pieces:
            space = foreign_space(piece)
            if space is not None:
                return space
        return None


_DIALECTS = frozenset({"mysql", "mariadb"})
NO_STATEMENT = "no SQL statement found"


def classify(sql: str, dialect: str = "mysql") -> Classification:
    """Classify every statement in ``sql``; the overall risk is the highest among them.

    Text with no statement at all (empty, blanks, comments) is a write with the reason
    "no SQL statement found": there is nothing to show read-only.
    """
    if dialect.lower() not in _DIALECTS:
        raise ValueError(f"unsupported SQL dialect {dialect!r}; the classifier reads MySQL/MariaDB")
    statements = _after_reading_changes([_statement(piece) for piece in split(sql)])
    if not statements:
        return Classification(sql, Risk.WRITE, (), (NO_STATEMENT,))
    risk = statements[0].risk
    for statement in statements[1:]:
        if _RANK[statement.risk] > _RANK[risk]:
            risk = statement.risk
    return Classification(sql, risk, statements, _overall_reasons(statements))


_REREAD = (
    "it runs after a SET that changes how the server reads SQL (sql_mode or the character "
    "set), but was judged as the server reads it by default; it is treated as reaching the "
    "whole server"
)


def _after_reading_changes(judged: list[tuple[Statement, bool]]) -> tuple[Statement, ...]:
    """Every statement after one that changes how the server reads SQL text (SET sql_mode,
    SET NAMES, …) was judged under the wrong reading: it is at least a write and reaches
    the whole server (the guard refuses it). Such a SET runs on its own, or last."""
    if not any(changes_reading for _, changes_reading in judged[:-1]):
        return tuple(statement for statement, _ in judged)  # the common case
    statements: list[Statement] = []
    changed = False
    for statement, changes_reading in judged:
        if changed:
            raised = statement.risk is Risk.READ_ONLY
            statement = replace(
                statement,
                risk=Risk.WRITE if raised else statement.risk,
                reasons=((_REREAD,) if raised else (*statement.reasons, _REREAD)),
                targets=(*statement.targets, SERVER),
                reads=(*statement.reads, SERVER),
            )
        statements.append(statement)
        changed = changed or changes_reading
    return tuple(statements)


def _statement(piece: Piece) -> tuple[Statement, bool]:
    changes_reading = False
    try:
        verdict = judge(piece)
        changes_reading = verdict.changes_reading
        risk, kind, reasons = verdict.risk, verdict.kind, tuple(verdict.reasons)
        targets, reads, calls = (
            tuple(verdict.targets),
            tuple(verdict.reads or ()),
            tuple(verdict.calls or ()),
        )
    except Exception as error:  # fail closed: a classifier bug must not let anything through
        risk, kind, targets, reads, calls = Risk.WRITE, "UNKNOWN", (), (SERVER,), ()
        reasons = (f"the classifier failed on it ({type(error).__name__}); not read-only",)
    space = foreign_space(piece)
    if space is not None:
        # The names the parser read are not the server's: nothing about them holds.
        why = (
            f"U+{ord(space):04X} outside quotes is part of a name on the server, not a space; "
            "quote the name or remove the character"
        )
        reasons = (why,) if risk is Risk.READ_ONLY else (*reasons, why)
        risk = Risk.WRITE if risk is Risk.READ_ONLY else risk
        targets, reads = (*targets, SERVER), (*reads, SERVER)
    if not reasons:
        reasons = (f"{kind} is {risk.value}",)
    statement = Statement(
        piece.text, piece.start, piece.end, risk, kind, reasons, targets, reads, calls, piece
    )
    return statement, changes_reading


def _overall_reasons(statements: tuple[Statement, ...]) -> tuple[str, ...]:
    """One statement: its reasons. Several: the reasons of every statement that is not
    read-only (riskiest first), each prefixed with its position and kind."""
    if len(statements) == 1:
        return statements[0].reasons
    numbered = list(enumerate(statements, start=1))
    risky = [(n, s) for n, s in numbered if s.risk is not Risk.READ_ONLY] or numbered
    risky.sort(key=lambda item: -item[1].risk.rank)
    reasons: dict[str, None] = {}  # ordered and duplicate-free in linear time
    for number, statement in risky:
        for reason in statement.reasons:
            reasons.setdefault(f"statement {number} ({statement.kind}): {reason}")
    return tuple(reasons)


# The judging modules use the types above (bot.sql.verdict imports Risk and TableRef from
# here), so they are imported after them. bot/sql/__init__.py imports this module first,
# which makes any import order work.
from bot.sql.lexical import (  # noqa: E402
    Piece,
    first_foreign_space,
    foreign_space,
    has_executable_comment,
    may_hold_foreign_space,
    rewrite_problem,
    rewritten_differently,
    split,
)
from bot.sql.statements import judge  # noqa: E402
from bot.sql.verdict import SERVER  # noqa: E402
