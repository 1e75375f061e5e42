"""What a statement writes beyond its own rows, and whether each part can be counted.

The number on a card is the total the server will write: the statement's own rows, the rows
its triggers write, the child rows its foreign keys cascade to, and the rows any stored
function or procedure it runs writes. This module says, from what the server holds
(`ServerReach`), which of those parts there are and how each is counted:

- a trigger whose body writes nothing, or only ``INSERT … VALUES`` (no IGNORE, no ON
  DUPLICATE KEY UPDATE) into tables with no triggers of their own, writes that many rows
  per row it fires for (the statement's own count); any other body is not counted ahead;
- a cascade from a single-table UPDATE or DELETE is counted by the rows referencing the
  ones it touches (bot.sql.cascades), key by key down the chain; a cascade from a
  multi-table statement, REPLACE or ON DUPLICATE KEY UPDATE, or one that cascades further
  through an updated key, is not;
- a stored function or procedure whose body writes rows is not counted ahead (one whose
  body writes nothing adds nothing).

What is not counted is said in words. At execution the server's own session counters
(`Handler_write`, `Handler_update`, `Handler_delete`: the statement, its triggers and its
stored functions) plus the cascade counts, taken again inside the transaction, are held to
the card's total (bot.db.bounded).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.db.reach import ForeignKey, ServerReach, Trigger, calls_of
from bot.sql.cascades import Link, assigned_columns, count_sql
from bot.sql.impact import plan
from bot.sql.risk import Statement, TableRef

DML = frozenset({"INSERT", "REPLACE", "UPDATE", "DELETE"})
# Statements that change no rows themselves: only the functions they call may write.
ROWLESS = frozenset({"SELECT", "WITH", "TABLE", "VALUES", "(", "SET", "DO"})
_WRITING_RULES = frozenset({"CASCADE", "SET NULL", "SET DEFAULT"})
_EVENTS: dict[str, frozenset[str]] = {
    "INSERT": frozenset({"INSERT", "UPDATE"}),
    "UPDATE": frozenset({"UPDATE"}),
    "DELETE": frozenset({"DELETE"}),
    "REPLACE": frozenset({"INSERT", "DELETE"}),
}
_MAX_DEPTH = 4


@dataclass(frozen=True, slots=True)
class FiredTrigger:
    description: str
    per_row: int  # rows its body writes each time it fires


@dataclass(frozen=True, slots=True)
class Cascade:
    description: str  # "shop.order_items via fk_items (ON DELETE CASCADE)"
    table: str  # "shop.order_items"
    count_sql: str
    locking_sql: str  # the same count, locking what it counts (inside the transaction)


@dataclass(frozen=True, slots=True)
class Beyond:
    """What a statement writes beyond its own rows."""

    triggers: tuple[FiredTrigger, ...] = ()
    cascades: tuple[Cascade, ...] = ()
    uncounted: tuple[str, ...] = ()  # parts that cannot be counted ahead, in words
    functions: tuple[str, ...] = ()  # stored programs it runs that write rows


@dataclass
class _Found:
    triggers: list[FiredTrigger] = field(default_factory=list)
    cascades: list[Cascade] = field(default_factory=list)
    uncounted: list[str] = field(default_factory=list)
    functions: list[str] = field(default_factory=list)

    def skip(self, why: str) -> None:
        if why not in self.uncounted:
            self.uncounted.append(why)


def beyond(statement: Statement, reach: ServerReach, *, upsert: bool = True) -> Beyond:
    """The triggers, cascades and stored programs `statement` sets off, and what of them
    cannot be counted. `upsert=False`: an INSERT without ON DUPLICATE KEY UPDATE."""
    found = _Found()
    _programs(found, statement, reach)
    if statement.kind in DML:
        written = [_resolved(t, reach.schema) for t in statement.targets if t.name]
        events = _EVENTS[statement.kind]
        if statement.kind == "INSERT" and not upsert:
            events = frozenset({"INSERT"})
        for table in written:
            if reach.view(table) is not None:
                found.skip(f"what it writes through the view {_named(table)}")
                continue
            _triggers(found, table, events, reach, several=len(written) > 1)
            _cascades(found, statement, table, reach, several=len(written) > 1, upsert=upsert)
    return Beyond(
        tuple(found.triggers), tuple(found.cascades), tuple(found.uncounted), tuple(found.functions)
    )


def may_update(statement: Statement) -> bool:
    """Whether a statement may update rows besides inserting them: anything but a plain
    INSERT (ON DUPLICATE KEY UPDATE, or one the parser cannot read, may)."""
    if statement.kind != "INSERT":
        return True
    measured = plan(statement.text, "INSERT", {})
    return measured.upsert or bool(measured.problem)


def _resolved(table: TableRef, default: str | None) -> TableRef:
    return TableRef(default, table.name) if table.schema is None else table


def _named(table: TableRef) -> str:
    return f"{table.schema}.{table.name}" if table.schema else table.name


def _writes(inner: Statement) -> bool:
    """Whether a statement of a stored program's body may write rows."""
    return bool(inner.targets or inner.calls)


def _programs(found: _Found, statement: Statement, reach: ServerReach) -> None:
    for routine in calls_of(statement):
        name = _resolved(routine, reach.schema)
        known = (
            reach.routine(name.schema, name.name)
            if name.schema is not None and reach.same_schema(name.schema, reach.schema)
            else None
        )
        label = f"{(known.kind if known else 'routine').lower()} {_named(name)}"
        if known is None or known.judged is None:
            found.skip(f"what the stored {label} writes (its body cannot be read)")
            found.functions.append(label)
        elif any(_writes(inner) for inner in known.judged.statements):
            found.skip(f"the rows the stored {label} writes")
            found.functions.append(label)


def _triggers(
    found: _Found, table: TableRef, events: frozenset[str], reach: ServerReach, *, several: bool
) -> None:
    for trigger in reach.triggers:
        if trigger.event not in events or not _on(reach, trigger, table):
            continue
        description = trigger.describe()
        if several:
            found.skip(f"the rows trigger {description} writes (a multi-table statement)")
            continue
        per_row = _per_row(trigger, reach)
        if per_row is None:
            found.skip(f"the rows trigger {description} writes")
        else:
            found.triggers.append(FiredTrigger(description, per_row))


def _on(reach: ServerReach, trigger: Trigger, table: TableRef) -> bool:
    return reach.same_schema(trigger.table_schema, table.schema) and reach.same_table(
        trigger.table, table.name
    )


def _per_row(trigger: Trigger, reach: ServerReach) -> int | None:
    """Rows a trigger's body writes each time it fires; None when that is not known."""
    if trigger.judged is None:
        return None
    rows = 0
    for inner in trigger.judged.statements:
        if not _writes(inner):
            continue
        if inner.kind != "INSERT" or inner.calls or len(inner.targets) != 1:
            return None
        measured = plan(inner.text, "INSERT", {})
        if measured.rows is None or measured.up_to or measured.problem:
            return None
        target = _resolved(inner.targets[0], trigger.schema)
        if any(_on(reach, other, target) for other in reach.triggers):
            return None  # it fires triggers of its own
        rows += measured.rows
    return rows


def _cascades(
    found: _Found,
    statement: Statement,
    table: TableRef,
    reach: ServerReach,
    *,
    several: bool,
    upsert: bool,
) -> None:
    kind = statement.kind
    event = "DELETE" if kind == "DELETE" else "UPDATE"
    keys = [k for k in _children(reach, table) if _writes_on(k, event, kind, upsert)]
    if not keys:
        return
    if kind not in ("UPDATE", "DELETE") or several:
        for key in keys:
            found.skip(f"the rows {_described(key, event)} writes")
        return
    assigned = assigned_columns(statement.text) if kind == "UPDATE" else None
    for key in keys:
        referenced = {c.lower() for c in _split(key.referenced)}
        if kind == "UPDATE" and assigned is not None and not referenced & assigned:
            continue  # the referenced columns keep their values: nothing cascades
        _follow(found, statement.text, reach, [(key, event)], {_named(table).lower()})


def _follow(
    found: _Found,
    text: str,
    reach: ServerReach,
    chain: list[tuple[ForeignKey, str]],
    seen: set[str],
) -> None:
    key, event = chain[-1]
    child = TableRef(key.schema, key.table)
    description = _described(key, event)
    links = [
        Link(TableRef(k.schema, k.table), _split(k.columns), _split(k.referenced)) for k, _ in chain
    ]
    plain = count_sql(text, links)
    locking = count_sql(text, links, lock=True)
    if not key.referenced or plain is None or locking is None:
        found.skip(f"the rows {description} writes")
        return
    found.cascades.append(Cascade(description, _named(child), plain, locking))
    rule = key.on_delete if event == "DELETE" else key.on_update
    deleted = event == "DELETE" and rule == "CASCADE"
    for below in _children(reach, child):
        if deleted and below.on_delete in _WRITING_RULES:
            if _named(child).lower() in seen or len(chain) >= _MAX_DEPTH:
                found.skip(f"the rows {_described(below, 'DELETE')} writes")
                continue
            _follow(found, text, reach, [*chain, (below, "DELETE")], seen | {_named(child).lower()})
        elif not deleted and below.on_update in _WRITING_RULES:
            changed = {c.lower() for c in _split(key.columns)}
            if {c.lower() for c in _split(below.referenced)} & changed or not below.referenced:
                found.skip(f"the rows {_described(below, 'UPDATE')} writes")


def _children(reach: ServerReach, parent: TableRef) -> list[ForeignKey]:
    return [
        key
        for key in reach.foreign_keys
        if reach.same_schema(key.parent_schema, parent.schema)
        and reach.same_table(key.parent_table, parent.name)
    ]


def _writes_on(key: ForeignKey, event: str, kind: str, upsert: bool) -> bool:
    if kind == "DELETE":
        return key.on_delete in _WRITING_RULES
    if kind == "UPDATE":
        return key.on_update in _WRITING_RULES
    if kind == "REPLACE":  # a replaced row is deleted (or updated) first
        return key.on_delete in _WRITING_RULES or key.on_update in _WRITING_RULES
    return upsert and key.on_update in _WRITING_RULES  # ON DUPLICATE KEY UPDATE


def _described(key: ForeignKey, event: str) -> str:
    rule = key.on_delete if event == "DELETE" else key.on_update
    return f"{key.schema}.{key.table} via {key.name} (ON {event} {rule})"


def _split(columns: str) -> tuple[str, ...]:
    return tuple(c.strip() for c in columns.split(",") if c.strip())
