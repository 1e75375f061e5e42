"""What a statement reaches on the server beyond the names it spells out.

A statement written against one schema can still change another: a ``CALL`` runs a stored
procedure's body, a write fires the triggers on its tables, and a foreign key with
``ON DELETE CASCADE`` (or ``SET NULL``, ``ON UPDATE …``) writes the child table. Which of
those exist is known only to the server, so it is read from information_schema, per
database, into a `ServerReach` snapshot:

- ``@@lower_case_table_names``, once, when the database is first used: whether the server
  folds the case of schema and table names (0, the Linux default: ``SHOP`` and ``shop``
  are two databases);
- the views of the database's own schema and of its read_schemas (a view reads, and an
  UPDATE through it writes, the tables of its definition), and for writes its routines,
  triggers and cascading foreign keys, cached for a few seconds (`SNAPSHOT_TTL_S`) and
  until the bot next writes to the database (a write of ours may be DDL: a new trigger,
  routine or foreign key; `Database.writes`); the run an approver allowed reads them afresh.

`walk` is the pure part: from a classification and a snapshot, everything each statement
reaches, with how it gets there. Bodies are judged statement by statement, compound ones
included (bot.sql.routines.classify_routine_body); a body the account cannot read, or one
that runs dynamic SQL, controls transactions or holds what the classifier cannot judge,
reaches the whole server (`TableRef("*", "*")`), which the guard refuses.

The snapshot's types, the walk over them and the reads that fill them live in one module
because they change together: a new kind of object the server holds needs all three.

information_schema.TRIGGERS lists only triggers on tables the account holds the TRIGGER
privilege for, so an account without it on the schema (globally or for the schema) cannot
tell "no triggers" from "none it may see": `triggers_visible` is False and the guard
refuses its writes. Known limit: stored functions called inside a statement are judged by
the classifier's function rules, not by their bodies.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bot.db.roles import current_role, role_visibility
from bot.db.types import DbError
from bot.sql.risk import Classification, Risk, Statement, TableRef, classify
from bot.sql.routines import classify_routine_body
from bot.sql.statements import changes_how_sql_is_read

if TYPE_CHECKING:
    from bot.db.database import Database

SERVER = TableRef("*", "*")
INFORMATION_SCHEMA = "information_schema"
SNAPSHOT_TTL_S = 5.0
MAX_DEPTH = 4  # CALLs and triggers nested deeper than this reach the whole server
_MAX_OBJECTS = 10_000  # routines, triggers or keys read per schema; more is refused
_RULES_THAT_WRITE = frozenset({"CASCADE", "SET NULL", "SET DEFAULT"})
_ALL_EVENTS = frozenset({"INSERT", "UPDATE", "DELETE"})
# Which triggers a statement of this kind fires (REPLACE deletes and inserts; INSERT may
# update through ON DUPLICATE KEY UPDATE). Kinds that change no rows themselves fire none
# (a CALL's body is walked statement by statement); any other kind fires every trigger.
_FIRE_NOTHING = frozenset({"SELECT", "WITH", "TABLE", "VALUES", "(", "SET", "DO", "USE", "CALL"})
_EVENTS: dict[str, frozenset[str]] = {
    "INSERT": frozenset({"INSERT", "UPDATE"}),
    "UPDATE": frozenset({"UPDATE"}),
    "DELETE": frozenset({"DELETE"}),
    "REPLACE": frozenset({"INSERT", "DELETE"}),
}


# --- what the server holds ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Routine:
    schema: str
    name: str
    kind: str  # PROCEDURE | FUNCTION
    body: str | None  # None or "": the account may not read it
    judged: Classification | None = None  # the body, classified


@dataclass(frozen=True, slots=True)
class Trigger:
    schema: str
    name: str
    table_schema: str
    table: str
    event: str  # INSERT | UPDATE | DELETE
    timing: str  # BEFORE | AFTER
    body: str
    judged: Classification | None = None

    def describe(self) -> str:
        return (
            f"{self.schema}.{self.name} ({self.timing} {self.event} on "
            f"{self.table_schema}.{self.table})"
        )


@dataclass(frozen=True, slots=True)
class ForeignKey:
    name: str
    schema: str  # the child's (referencing) table
    table: str
    columns: str  # "order_id" or "a, b"
    parent_schema: str
    parent_table: str
    on_update: str  # CASCADE | SET NULL | SET DEFAULT | RESTRICT | NO ACTION
    on_delete: str
    referenced: str = ""  # the parent's columns, in the order of `columns`


@dataclass(frozen=True, slots=True)
class View:
    schema: str
    name: str
    definition: str | None  # None: the account may not see it (SHOW VIEW)
    judged: Classification | None = None


@dataclass(frozen=True, slots=True)
class ServerReach:
    """What the server said about one database's schema."""

    schema: str | None
    lower_case_table_names: int | None  # None: not known, so names compare exactly
    routines: tuple[Routine, ...] = ()
    triggers: tuple[Trigger, ...] = ()
    foreign_keys: tuple[ForeignKey, ...] = ()
    programs_read: bool = False  # routines, triggers and keys were read (writes need them)
    # information_schema.TRIGGERS lists only triggers the account holds TRIGGER for: without
    # that privilege on the schema, "no triggers" means "none it may see".
    triggers_visible: bool = True
    # information_schema lists a foreign key only to holders of a privilege on its child
    # table: an account granted just its own schema cannot see the keys other schemas'
    # tables hold on it, and the server cascades into them all the same. A table privilege
    # held globally (REFERENCES will do) shows every key.
    keys_visible: bool = True
    # A view reads (and an UPDATE on it writes) the tables of its definition.
    views: tuple[View, ...] = ()

    def folds(self) -> bool:
        return bool(self.lower_case_table_names)

    def same_schema(self, a: str | None, b: str | None) -> bool:
        if a is None or b is None:
            return False
        if a.lower() == INFORMATION_SCHEMA == b.lower():
            return True  # always case-insensitive
        return a.lower() == b.lower() if self.folds() else a == b

    def same_table(self, a: str, b: str) -> bool:
        return a.lower() == b.lower() if self.folds() else a == b

    def view(self, table: TableRef) -> View | None:
        for view in self.views:
            if self.same_schema(view.schema, table.schema) and self.same_table(
                view.name, table.name
            ):
                return view
        return None

    def routine(self, schema: str, name: str) -> Routine | None:
        # Routine names are never case-sensitive on MySQL/MariaDB; their schema is.
        for routine in self.routines:
            if self.same_schema(routine.schema, schema) and routine.name.lower() == name.lower():
                return routine
        return None


# --- what a statement reaches (pure) ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Reaching:
    """One table (or the whole server) a statement writes, and the way it gets there."""

    table: TableRef  # schema always filled in, except when no default schema is known
    via: str = ""  # "" for the statement itself; "trigger shop.trg (…)", "procedure shop.p"


@dataclass(frozen=True, slots=True)
class Reached:
    writes: tuple[Reaching, ...] = ()
    reads: tuple[Reaching, ...] = ()
    triggers: tuple[str, ...] = ()  # Trigger.describe() of each trigger that fires
    cascades: tuple[str, ...] = ()  # "shop.order_items (order_id) via fk (ON DELETE CASCADE)"
    # Stored programs on the way whose body runs DDL ("procedure shop.p"): MySQL/MariaDB
    # commit it implicitly, so the approved call's transaction could not bound or undo it.
    commits: tuple[str, ...] = ()
    # Stored programs on the way that change a setting later statements are read or checked
    # by ("procedure shop.p sets FOREIGN_KEY_CHECKS"): it outlives the CALL.
    settings: tuple[str, ...] = ()


@dataclass
class _Walk:
    server: ServerReach
    upsert: bool = True  # an INSERT may update rows (ON DUPLICATE KEY UPDATE)
    writes: list[Reaching] = field(default_factory=list)
    reads: list[Reaching] = field(default_factory=list)
    triggers: list[str] = field(default_factory=list)
    cascades: list[str] = field(default_factory=list)
    commits: list[str] = field(default_factory=list)
    settings: list[str] = field(default_factory=list)

    def write(self, table: TableRef, via: str) -> None:
        reaching = Reaching(table, via)
        if reaching not in self.writes:
            self.writes.append(reaching)

    def read(self, table: TableRef, via: str) -> None:
        reaching = Reaching(table, via)
        if reaching not in self.reads:
            self.reads.append(reaching)

    def server_wide(self, via: str) -> None:
        self.write(SERVER, via)

    def done(self) -> Reached:
        return Reached(
            tuple(self.writes),
            tuple(self.reads),
            tuple(self.triggers),
            tuple(self.cascades),
            tuple(self.commits),
            tuple(self.settings),
        )


def walk(statement: Statement, server: ServerReach, *, upsert: bool = True) -> Reached:
    """Everything one statement reaches: its own targets and reads (resolved against the
    default schema), the bodies of the procedures it calls, the triggers its writes fire and
    the foreign keys that cascade from them, transitively. `upsert=False` says the statement,
    if an INSERT, has no ON DUPLICATE KEY UPDATE (its UPDATE triggers then do not fire)."""
    state = _Walk(server, upsert)
    _statement(state, statement, server.schema, "", 0, frozenset())
    return state.done()


def calls_of(statement: Statement) -> tuple[TableRef, ...]:
    """Routines a statement calls (CALL p: its target when the classifier lists no calls)."""
    if not statement.calls and statement.kind == "CALL":
        return statement.targets  # fail closed should the classifier not name it
    return statement.calls


def _resolve(table: TableRef, default: str | None) -> TableRef:
    if table.schema is None and default is not None:
        return TableRef(default, table.name)
    return table


def _statement(
    state: _Walk,
    statement: Statement,
    default: str | None,
    via: str,
    depth: int,
    seen: frozenset[str],
) -> None:
    if depth > MAX_DEPTH:
        state.server_wide(f"{via}: stored programs nested more than {MAX_DEPTH} deep")
        return
    written: list[TableRef] = []
    for target in statement.targets:
        if statement.kind == "CALL" and target in calls_of(statement):
            continue  # a procedure's name is not a table it writes
        resolved = _resolve(target, default)
        state.write(resolved, via)
        written.append(resolved)
    for table in statement.reads:
        resolved = _resolve(table, default)
        state.read(resolved, via)
        _through_view(state, resolved, via, depth, write=False)
    for table in list(written):
        written.extend(_through_view(state, table, via, depth, write=True))
    for routine in calls_of(statement):
        _call(state, _resolve(routine, default), via, depth, seen)
    if statement.risk is Risk.DDL or not state.server.programs_read:
        return  # DDL fires no trigger and no cascade
    if statement.kind in _FIRE_NOTHING:
        return
    events = _EVENTS.get(statement.kind, _ALL_EVENTS)
    if statement.kind == "INSERT" and depth == 0 and not state.upsert:
        events = frozenset({"INSERT"})
    for table in written:
        if table.name and table.schema not in (None, "*"):
            _fire(state, table, events, depth, seen)
            _cascade(state, table, events, set())


def _through_view(
    state: _Walk, table: TableRef, via: str, depth: int, *, write: bool
) -> list[TableRef]:
    """A view's tables are read by reading it and written by writing through it; the base
    tables written are returned, for their triggers and foreign keys."""
    view = state.server.view(table) if table.name else None
    if view is None:
        return []
    here = f"view {view.schema}.{view.name}" + (f" ({via})" if via else "")
    if depth >= MAX_DEPTH:
        state.server_wide(f"{here}: views nested more than {MAX_DEPTH} deep")
        return []
    if view.judged is None:
        unreadable = f"{here}: its definition cannot be read (SHOW VIEW)"
        if write:
            state.server_wide(unreadable)
        else:
            state.read(SERVER, unreadable)
        return []
    bases: list[TableRef] = []
    for inner in view.judged.statements:
        for routine in calls_of(inner):
            resolved_routine = _resolve(routine, view.schema)
            if state.server.programs_read:
                _call(state, resolved_routine, here, depth + 1, frozenset())
            else:  # a query: bodies are not read for it, so what the function reads is not known
                state.read(SERVER, f"{here}: it calls the stored function {routine.name}")
        for base in inner.reads:
            resolved = _resolve(base, view.schema)
            if write:
                state.write(resolved, here)
                bases.append(resolved)
            else:
                state.read(resolved, here)
            bases.extend(_through_view(state, resolved, here, depth + 1, write=write))
    return bases


def _call(state: _Walk, routine: TableRef, via: str, depth: int, seen: frozenset[str]) -> None:
    name = f"{routine.schema}.{routine.name}" if routine.schema else routine.name
    here = f"procedure {name}" if not via else f"{via} → procedure {name}"
    server = state.server
    if routine.schema is None:
        state.server_wide(f"{here}: no default schema says which procedure this is")
        return
    if not server.same_schema(routine.schema, server.schema):
        state.write(routine, here)  # another schema's routine: its name is foreign enough
        return
    found = server.routine(routine.schema, routine.name)
    if found is None or not found.body:
        state.server_wide(f"{here}: its body cannot be read (no such routine, or no privilege)")
        return
    key = f"routine:{found.schema}.{found.name}".lower()
    if key in seen:
        return  # recursion: what it reaches is already being counted
    _body(state, found.judged, found.schema, here, depth, seen | {key})


def _body(
    state: _Walk,
    judged: Classification | None,
    schema: str,
    via: str,
    depth: int,
    seen: frozenset[str],
) -> None:
    unbounded = _unbounded(judged)
    if unbounded:
        state.server_wide(f"{via}: its body {unbounded}")
        return
    assert judged is not None
    if any(inner.risk is Risk.DDL for inner in judged.statements) and via not in state.commits:
        state.commits.append(via)
    for inner in judged.statements:
        setting = changes_how_sql_is_read(inner.text)
        if setting is not None and f"{via} sets {setting}" not in state.settings:
            state.settings.append(f"{via} sets {setting}")
        _statement(state, inner, schema, via, depth + 1, seen)


def _unbounded(judged: Classification | None) -> str:
    """Why a stored program's body cannot be bounded, or "" when it can."""
    if judged is None or not judged.statements:
        return "cannot be read"
    if judged.risk is Risk.TRANSACTION:
        return "runs dynamic SQL or controls transactions"
    if any(statement.kind == "UNKNOWN" for statement in judged.statements):
        return "is a compound statement or one the classifier cannot judge"
    return ""


def _fire(
    state: _Walk, table: TableRef, events: frozenset[str], depth: int, seen: frozenset[str]
) -> None:
    server = state.server
    for trigger in server.triggers:
        if trigger.event not in events:
            continue
        if not (
            server.same_schema(trigger.table_schema, table.schema)
            and server.same_table(trigger.table, table.name)
        ):
            continue
        description = trigger.describe()
        if description not in state.triggers:
            state.triggers.append(description)
        key = f"trigger:{trigger.schema}.{trigger.name}".lower()
        if key not in seen:
            _body(
                state, trigger.judged, trigger.schema, f"trigger {description}", depth, seen | {key}
            )


def _cascade(state: _Walk, parent: TableRef, events: frozenset[str], seen: set[str]) -> None:
    """Foreign keys that write their child table when rows of `parent` change. Cascaded
    changes fire no triggers (MySQL/MariaDB), but cascade further."""
    server = state.server
    for key in server.foreign_keys:
        if not (
            server.same_schema(key.parent_schema, parent.schema)
            and server.same_table(key.parent_table, parent.name)
        ):
            continue
        for event, rule in (("DELETE", key.on_delete), ("UPDATE", key.on_update)):
            if event not in events or rule not in _RULES_THAT_WRITE:
                continue
            child = TableRef(key.schema, key.table)
            description = (
                f"{key.schema}.{key.table} ({key.columns}) via {key.name} (ON {event} {rule})"
            )
            if description not in state.cascades:
                state.cascades.append(description)
            state.write(child, f"foreign key {key.name} (ON {event} {rule})")
            marker = f"{key.schema}.{key.name}.{event}".lower()
            if marker not in seen:
                seen.add(marker)
                # ON DELETE CASCADE deletes child rows; SET NULL/DEFAULT and ON UPDATE
                # CASCADE update them.
                follows = frozenset(
                    {"DELETE"} if rule == "CASCADE" and event == "DELETE" else {"UPDATE"}
                )
                _cascade(state, child, follows, seen)


# --- reading it from the server -----------------------------------------------------------

# The views of the own schema and of the schemas reads may go to (read_schemas): a view
# there reads whatever its definition reads.
_VIEWS = (
    "SELECT TABLE_SCHEMA, TABLE_NAME, VIEW_DEFINITION FROM information_schema.VIEWS"
    " WHERE TABLE_SCHEMA IN ({schemas})"
)
_ROUTINES = (
    "SELECT ROUTINE_SCHEMA, ROUTINE_NAME, ROUTINE_TYPE, ROUTINE_DEFINITION"
    " FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = %s"
)
_TRIGGERS = (
    "SELECT TRIGGER_SCHEMA, TRIGGER_NAME, EVENT_OBJECT_SCHEMA, EVENT_OBJECT_TABLE,"
    " EVENT_MANIPULATION, ACTION_TIMING, ACTION_STATEMENT"
    " FROM information_schema.TRIGGERS WHERE EVENT_OBJECT_SCHEMA = %s"
)
# Keys whose parent is in the schema: their children may be anywhere.
_FOREIGN_KEYS = (
    "SELECT rc.CONSTRAINT_SCHEMA, rc.CONSTRAINT_NAME, rc.TABLE_NAME,"
    " GROUP_CONCAT(k.COLUMN_NAME ORDER BY k.ORDINAL_POSITION SEPARATOR ', '),"
    " rc.UNIQUE_CONSTRAINT_SCHEMA, rc.REFERENCED_TABLE_NAME, rc.UPDATE_RULE, rc.DELETE_RULE,"
    " GROUP_CONCAT(k.REFERENCED_COLUMN_NAME ORDER BY k.ORDINAL_POSITION SEPARATOR ', ')"
    " FROM information_schema.REFERENTIAL_CONSTRAINTS rc"
    " JOIN information_schema.KEY_COLUMN_USAGE k"
    "  ON k.CONSTRAINT_SCHEMA = rc.CONSTRAINT_SCHEMA AND k.CONSTRAINT_NAME = rc.CONSTRAINT_NAME"
    "  AND k.TABLE_NAME = rc.TABLE_NAME AND k.REFERENCED_TABLE_NAME IS NOT NULL"
    " WHERE rc.UNIQUE_CONSTRAINT_SCHEMA = %s"
    " GROUP BY rc.CONSTRAINT_SCHEMA, rc.CONSTRAINT_NAME, rc.TABLE_NAME,"
    "  rc.UNIQUE_CONSTRAINT_SCHEMA, rc.REFERENCED_TABLE_NAME, rc.UPDATE_RULE, rc.DELETE_RULE"
)

# A table privilege held globally: information_schema then lists every foreign key.
_GLOBAL_TABLE_PRIVILEGE = (
    "SELECT COUNT(*) FROM information_schema.USER_PRIVILEGES WHERE PRIVILEGE_TYPE IN"
    " ('SELECT', 'INSERT', 'UPDATE', 'DELETE', 'CREATE', 'DROP', 'REFERENCES', 'INDEX',"
    " 'ALTER', 'CREATE VIEW', 'SHOW VIEW', 'TRIGGER', 'DELETE HISTORY')"
)
# Held globally or for the schema (SCHEMA_PRIVILEGES names may be LIKE patterns: shop\_%).
_TRIGGER_PRIVILEGE = (
    "SELECT (SELECT COUNT(*) FROM information_schema.USER_PRIVILEGES"
    " WHERE PRIVILEGE_TYPE = 'TRIGGER')"
    " + (SELECT COUNT(*) FROM information_schema.SCHEMA_PRIVILEGES"
    " WHERE PRIVILEGE_TYPE = 'TRIGGER' AND %s LIKE TABLE_SCHEMA)"
)


class ReachError(Exception):
    """The server could not say what a statement reaches; the statement is not run."""


@dataclass
class _Cached:
    snapshot: ServerReach | None = None
    read_at: float = 0.0
    writes: int = -1  # the database's count of our writes when the snapshot was begun
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


# Per database and acting role ([databases.access]): information_schema shows a role only
# what it may access, so one role's snapshot is not another's.
_cache: weakref.WeakKeyDictionary[Database, dict[str | None, _Cached]] = weakref.WeakKeyDictionary()


async def look_up(
    database: Database,
    *,
    programs: bool,
    max_age_s: float = SNAPSHOT_TTL_S,
    clock: Callable[[], float] = time.monotonic,
) -> ServerReach:
    """What the server says about `database`'s schema: its case rule and views, and with
    `programs` also its routines, triggers and cascading foreign keys (writes need them).
    Raises ReachError when the server cannot be asked."""
    cached = _cache.setdefault(database, {}).setdefault(current_role(), _Cached())
    async with cached.lock:
        known = cached.snapshot
        if (
            known is not None
            and clock() - cached.read_at <= max_age_s
            and cached.writes == database.writes  # no write of ours since: no DDL of ours
            and (known.programs_read or not programs)
        ):
            return known
        writes, began = database.writes, clock()
        try:
            snapshot = await _read(database, database.config.schema_name, programs=programs)
        except DbError as exc:
            raise ReachError(exc.message) from None
        cached.snapshot, cached.read_at, cached.writes = snapshot, began, writes
        return snapshot


async def _read(database: Database, schema: str | None, *, programs: bool) -> ServerReach:
    # A write's reach is read on the primary, where it will run; a read's where it runs.
    reads = database.primary_reads() if programs else database.catalog_reads()
    async with reads as session:
        raw = await session.fetch("SELECT @@lower_case_table_names", limit=1)
        case_rule = int(raw.rows[0][0])
        if schema is None:
            return ServerReach(schema, case_rule, programs_read=programs)
        readable = (schema, *database.config.read_schemas)
        views = await session.fetch(
            _VIEWS.format(schemas=", ".join(["%s"] * len(readable))), readable, limit=_MAX_OBJECTS
        )
        if views.truncated:
            raise ReachError(f"more than {_MAX_OBJECTS:,} views")
        read_views = await asyncio.to_thread(_views, views.rows)
        if not programs:
            return ServerReach(schema, case_rule, views=read_views)
        routines = await session.fetch(_ROUTINES, (schema,), limit=_MAX_OBJECTS)
        triggers = await session.fetch(_TRIGGERS, (schema,), limit=_MAX_OBJECTS)
        keys = await session.fetch(_FOREIGN_KEYS, (schema,), limit=_MAX_OBJECTS)
        privilege = await session.fetch(_TRIGGER_PRIVILEGE, (schema,), limit=1)
        global_privilege = await session.fetch(_GLOBAL_TABLE_PRIVILEGE, limit=1)
        triggers_visible = bool(privilege.rows and int(privilege.rows[0][0] or 0) > 0)
        keys_visible = bool(global_privilege.rows and int(global_privilege.rows[0][0] or 0) > 0)
        if isinstance(session.role, str) and not (triggers_visible and keys_visible):
            by_role = await role_visibility(session, schema)  # a role's grants: SHOW GRANTS
            triggers_visible, keys_visible = (
                triggers_visible or by_role[0],
                keys_visible or by_role[1],
            )
    if routines.truncated or triggers.truncated or keys.truncated:
        raise ReachError(f"more than {_MAX_OBJECTS:,} routines, triggers or foreign keys")
    # Classifying bodies is CPU work of unbounded size: off the event loop.
    snapshot = await asyncio.to_thread(
        _snapshot, schema, case_rule, routines.rows, triggers.rows, keys.rows
    )
    return dataclasses.replace(
        snapshot, triggers_visible=triggers_visible, keys_visible=keys_visible, views=read_views
    )


def _views(rows: Iterable[tuple[object, ...]]) -> tuple[View, ...]:
    views = []
    for schema, name, definition in rows:
        text = _text(definition)
        views.append(View(_text(schema), _text(name), text or None, _judge_view(text)))
    return tuple(views)


def _text(value: object) -> str:
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "replace")
    return "" if value is None else str(value)


def _judge(body: str) -> Classification | None:
    """A routine's or trigger's body, judged statement by statement (compound ones too)."""
    return classify_routine_body(body) if body.strip() else None


def _judge_view(definition: str) -> Classification | None:
    return classify(definition) if definition.strip() else None


def _snapshot(
    schema: str,
    case_rule: int,
    routines: Iterable[tuple[object, ...]],
    triggers: Iterable[tuple[object, ...]],
    keys: Iterable[tuple[object, ...]],
) -> ServerReach:
    read_routines = []
    for r_schema, name, kind, body in routines:
        text = _text(body)
        read_routines.append(
            Routine(_text(r_schema), _text(name), _text(kind), text or None, _judge(text))
        )
    read_triggers = []
    for t_schema, name, table_schema, table, event, timing, body in triggers:
        text = _text(body)
        read_triggers.append(
            Trigger(
                _text(t_schema),
                _text(name),
                _text(table_schema),
                _text(table),
                _text(event).upper(),
                _text(timing).upper(),
                text,
                _judge(text),
            )
        )
    read_keys = [
        ForeignKey(
            name=_text(name),
            schema=_text(child_schema),
            table=_text(child),
            columns=_text(columns),
            parent_schema=_text(parent_schema),
            parent_table=_text(parent),
            on_update=_text(on_update).upper(),
            on_delete=_text(on_delete).upper(),
            referenced=_text(referenced),
        )
        for (
            child_schema,
            name,
            child,
            columns,
            parent_schema,
            parent,
            on_update,
            on_delete,
            referenced,
        ) in keys
    ]
    return ServerReach(
        schema,
        case_rule,
        tuple(read_routines),
        tuple(read_triggers),
        tuple(read_keys),
        programs_read=True,
    )
