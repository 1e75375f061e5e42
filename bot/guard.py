"""The guard: what happens to a classified statement on a given database.

A pure function of (classification, the database's configuration, what the server said the
statement reaches, whether a grant matches). Its messages tell the model what to do next.

| risk        | production                      | other environments                      |
|-------------|---------------------------------|-----------------------------------------|
| read_only   | run read-only, on the replica   | run read-only (replica when configured) |
| write, ddl  | refuse; show SQL for the change | run with a matching grant, else approval|
| transaction | refuse                          | refuse                                  |

Before that table applies, a statement must stay inside its database:
- reads (a query's, and a write's sources) touch only the database's own schema, the schemas
  its configuration lists in `read_schemas`, and information_schema's rows about those
  (a query's catalog reads run through a filter, bot.sql.catalog_reads; a change's cannot);
- writes change only the own schema, counting what they reach on the server: the bodies of
  procedures they CALL, the triggers their writes fire and the foreign keys that cascade
  from them (bot.db.reach). Anything that reaches the whole server is refused.
Names compare the way the server compares them: case-folded only when its
lower_case_table_names says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.config import DatabaseConfig, Environment
from bot.db.reach import INFORMATION_SCHEMA, Reached, Reaching, ServerReach, walk
from bot.sql.catalog_reads import (
    Unconfined,
    confine,
    is_catalog,
    other_sessions,
    reads_rows_whole,
)
from bot.sql.lexical import has_executable_comment
from bot.sql.risk import Classification, Risk
from bot.sql.statements import (
    changes_how_sql_is_read,
    hides_itself,
    switches_checks,
    texts_it_runs,
)


@dataclass(frozen=True, slots=True)
class Run:
    read_only: bool
    use_replica: bool = False
    # What runs, statement by statement, when it is not the statements as written: reads of
    # information_schema confined to rows about the database's schemas (bot.sql.catalog_reads).
    texts: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class NeedsApproval:
    reason: str


@dataclass(frozen=True, slots=True)
class Refused:
    reason: str  # starts with "Blocked: "


Decision = Run | NeedsApproval | Refused

PRODUCTION_WRITE = (
    "Blocked: writes on production databases are not allowed; show the SQL to the user "
    "for their change process."
)
TRANSACTION_CONTROL = (
    "Blocked: transaction control statements (BEGIN, COMMIT, ROLLBACK, SAVEPOINT, XA, "
    "autocommit) are not allowed; each approved statement runs on its own. Send the change "
    "as plain statements in one execute_query call instead."
)
NO_STATEMENT = "Blocked: no SQL statement found."
UNREAD_PROGRAMS = (
    "Blocked: the server's triggers, procedures and foreign keys for this database could not "
    "be read, so what the change reaches is not known."
)
HIDDEN_TRIGGERS = (
    "Blocked: the database account may not see the triggers on {schema} (it lacks the TRIGGER "
    "privilege there), so what the change fires is not known. Grant TRIGGER on the schema to "
    "the bot's account."
)
FOREIGN_SPACE = (
    "Blocked: the SQL holds {code} outside quotes. The server reads it as part of a name, not "
    "as a space, so it would run on other tables than it seems to name. Type plain spaces."
)
HIDDEN_BY_COMMENT = (
    "Blocked: statement {number} ({kind}) holds an executable comment (/*! … */ or "
    "/*M! … */), which the server runs or skips by its version: the card could not show what "
    "it changes, nor could its rows be bounded. Send it without the comment."
)
REREAD = (
    "Blocked: statement {number} sets {setting}, which changes how the server reads or "
    "checks the statements after it, so they would not run as they were judged and shown. "
    "Send it on its own."
)
PROGRAM_SETTING = (
    "Blocked: statement {number} runs a stored program that changes a setting the statements "
    "after it are read or checked by ({ways}), so they would not run as they were judged and "
    "shown. Send it on its own."
)
HIDES_ITSELF = (
    "Blocked: statement {number} sets {setting}, which {what}. A change must reach the "
    "replicas, CDC and the server's logs like any other: send it without that setting."
)
UNCHECKED = (
    "Blocked: statement {number} runs with {setting} off, so the cascades and checks the "
    "card shows would not happen. Send it without SET STATEMENT."
)
IMPLICIT_COMMIT = (
    "Blocked: {what} runs DDL, which MySQL/MariaDB commit implicitly: the approved call's "
    "transaction could neither bound nor roll it back. Run the DDL itself instead."
)
# Kinds whose statements are DDL by what they are; any other kind rated DDL got there
# through an executable comment.
_DDL_WORDS = frozenset(
    {"CREATE", "ALTER", "DROP", "RENAME", "TRUNCATE", "OPTIMIZE", "ANALYZE", "REPAIR", "CHECK"}
)
CHANGE_READS_CATALOG = (
    "Blocked: statement {number} reads information_schema rows, which a change cannot read "
    "confined to this database's schemas (it runs exactly as approved). Query "
    "information_schema first, then write the values it gave."
)
CATALOG_VIA = (
    "Blocked: the statement reads information_schema.{view} through {via}; rows read inside "
    "a view or stored program cannot be confined to this database's schemas."
)
HIDDEN_KEYS = (
    "Blocked: the database account may not see the foreign keys other schemas' tables hold "
    "on {schema} (information_schema lists a key only to holders of a privilege on its "
    "table), so where the change cascades is not known. Grant the bot's account a table "
    "privilege on *.* that lets it write nothing, such as REFERENCES."
)
# The classifier's target schema for statements that reach beyond any one database.
SERVER_WIDE = "*"
_BEYOND = (
    "things beyond this database (the server's users, privileges, settings or files, stored "
    "programs, or other servers)"
)


def reached(classification: Classification, reach: ServerReach) -> tuple[Reached, ...]:
    """What each statement reaches, in statement order."""
    return tuple(walk(statement, reach) for statement in classification.statements)


def _name(reaching: Reaching) -> str:
    table = reaching.table
    if table.schema == SERVER_WIDE:
        what = _BEYOND
    else:
        what = f"{table.schema}.{table.name}" if table.name else str(table.schema)
    return f"{what} (through {reaching.via})" if reaching.via else what


def _foreign_writes(found: tuple[Reached, ...], reach: ServerReach) -> list[str]:
    own = reach.schema
    foreign: list[str] = []
    for statement in found:
        for reaching in statement.writes:
            schema = reaching.table.schema
            if schema is None:
                continue  # unqualified with no default schema: the server refuses it
            if schema == SERVER_WIDE or not reach.same_schema(schema, own):
                foreign.append(_name(reaching))
    return foreign


def _foreign_reads(
    found: tuple[Reached, ...], reach: ServerReach, database: DatabaseConfig
) -> list[str]:
    allowed = [reach.schema, INFORMATION_SCHEMA, *database.read_schemas]
    foreign: list[str] = []
    for statement in found:
        for reaching in statement.reads:
            schema = reaching.table.schema
            if schema is None:
                continue
            if schema == SERVER_WIDE or not any(reach.same_schema(schema, a) for a in allowed):
                foreign.append(_name(reaching))
    return foreign


def _confined(
    classification: Classification,
    found: tuple[Reached, ...],
    reach: ServerReach,
    database: DatabaseConfig,
) -> tuple[str, ...] | Refused:
    """What runs: each statement with its information_schema reads confined to rows about the
    schemas the database may read; Refused when that cannot be done."""
    for reached_by in found:
        for reaching in reached_by.reads:
            table = reaching.table
            if reaching.via and is_catalog(table) and not reads_rows_whole(table.name):
                return Refused(CATALOG_VIA.format(view=table.name, via=reaching.via))
    schemas = [s for s in (reach.schema, *database.read_schemas) if s]
    texts: list[str] = []
    for number, statement in enumerate(classification.statements, 1):
        text = confine(statement, schemas, folds=reach.folds())
        if isinstance(text, Unconfined):
            return Refused(text.reason)
        if text != statement.text and not classification.is_read_only:
            return Refused(CHANGE_READS_CATALOG.format(number=number))
        texts.append(text)
    return tuple(texts)


def _private_reads(found: tuple[Reached, ...]) -> str | None:
    """Why a read would show other sessions' statements or the server's accounts, or None."""
    for reached_by in found:
        for reaching in reached_by.reads:
            private = other_sessions(reaching.table, _name(reaching))
            if private is not None:
                return private.reason
    return None


def _not_as_judged(classification: Classification) -> str | None:
    """Why a statement might not run the way it was judged and counted, or None."""
    statements = classification.statements
    for number, statement in enumerate(statements, 1):
        if statement.risk is Risk.READ_ONLY:
            continue
        first_word = statement.kind.split(" ", 1)[0]
        # What EXECUTE IMMEDIATE '…' or PREPARE '…' hands the server counts as written out.
        # The checks are cheap to skip: a long script must not hold the event loop here.
        dynamic = first_word in ("EXECUTE", "PREPARE")
        for text in texts_it_runs(statement.text) if dynamic else (statement.text,):
            if dynamic:  # a statement held in a literal, cut here for the first time
                commented = "/*" in text and has_executable_comment(text)
            else:
                commented = statement.executable_comment  # from the classifier's cut
            if first_word not in _DDL_WORDS and commented:
                return HIDDEN_BY_COMMENT.format(number=number, kind=statement.kind)
            if not dynamic and first_word != "SET":
                continue
            hides = hides_itself(text)
            if hides is not None:
                return HIDES_ITSELF.format(number=number, setting=hides[0], what=hides[1])
            setting = changes_how_sql_is_read(text) if number < len(statements) else None
            if setting is not None:
                return REREAD.format(number=number, setting=setting)
            setting = switches_checks(text)
            if setting is not None:
                return UNCHECKED.format(number=number, setting=setting)
    return None


def _settings(found: tuple[Reached, ...]) -> str | None:
    for number, statement in enumerate(found[:-1], 1):
        if statement.settings:
            return PROGRAM_SETTING.format(number=number, ways=_unique(list(statement.settings)))
    return None


def _commits(found: tuple[Reached, ...]) -> str | None:
    ways = [way for statement in found for way in statement.commits]
    return IMPLICIT_COMMIT.format(what=_unique(ways)) if ways else None


def _unique(names: list[str]) -> str:
    return ", ".join(dict.fromkeys(names))


def judge(
    classification: Classification,
    database: DatabaseConfig,
    *,
    granted: bool,
    reach: ServerReach,
) -> Decision:
    if not classification.statements:
        return Refused(NO_STATEMENT)
    space = classification.foreign_space
    if space is not None:
        return Refused(FOREIGN_SPACE.format(code=f"U+{ord(space):04X}"))
    risk = classification.risk
    if risk is Risk.TRANSACTION:
        return Refused(TRANSACTION_CONTROL)
    found = reached(classification, reach)
    # Before the reads: a statement read otherwise than judged is refused for what it is.
    hidden = _not_as_judged(classification)
    if hidden is not None:
        return Refused(hidden)
    own = database.schema_name or "(none configured)"
    foreign_reads = _foreign_reads(found, reach, database)
    if foreign_reads:
        extra = f" and {', '.join(database.read_schemas)}" if database.read_schemas else ""
        return Refused(
            f"Blocked: the statement reads {_unique(foreign_reads)}, outside {database.name}'s "
            f"schema {own}{extra}; reads stay in the database's own schema (and its "
            "configured read_schemas)."
        )
    private = _private_reads(found)  # even when read_schemas lists such a schema
    if private is not None:
        return Refused(private)
    texts = _confined(classification, found, reach, database)
    if isinstance(texts, Refused):
        return texts
    if risk is Risk.READ_ONLY:
        as_written = all(t == s.text for t, s in zip(texts, classification.statements, strict=True))
        return Run(
            read_only=True,
            use_replica=database.read_url is not None,
            texts=None if as_written else texts,
        )
    if database.environment is Environment.PRODUCTION:
        return Refused(PRODUCTION_WRITE)
    if not reach.programs_read:
        return Refused(UNREAD_PROGRAMS)
    if not reach.triggers_visible and any(s.risk is Risk.WRITE for s in classification.statements):
        return Refused(HIDDEN_TRIGGERS.format(schema=own))
    if not reach.keys_visible and any(s.risk is Risk.WRITE for s in classification.statements):
        return Refused(HIDDEN_KEYS.format(schema=own))
    foreign = _foreign_writes(found, reach)
    if foreign:
        return Refused(
            f"Blocked: the statement changes {_unique(foreign)}, outside {database.name}'s own "
            f"schema {own}; changes are allowed only in the database's own schema."
        )
    commits = _commits(found) or _settings(found)
    if commits is not None:
        return Refused(commits)
    if granted:
        return Run(read_only=False)
    why = "; ".join(classification.reasons) or f"{risk.value} statement"
    return NeedsApproval(
        f"Awaiting approval: a {risk.value} statement on {database.name} "
        f"({database.environment.value}) needs an approver's click ({why})."
    )
