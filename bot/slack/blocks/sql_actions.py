"""Block Kit for the SQL an answer proposes: Run / Edit & run buttons, the database menu,
the editor modal, and the line that says who ran what.

Button values carry only the stored proposal's id: the SQL always comes from the store
(or, for Edit & run, from what the person typed in the modal). A database name may come
from a menu in the payload, since it is checked against the configuration before use.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from bot.config import DatabaseConfig
from bot.slack import mrkdwn, strings
from bot.slack.blocks.common import Block, code_block, context, markdown_section, person, plain
from bot.sql.lexical import trim_sql

RUN = "sql_run"
EDIT = "sql_edit"
CHOOSE_DATABASE = "sql_database"
ACTIONS_PREFIX = "sql_actions:"  # + the proposal id: unique within a message

EDIT_VIEW = "sql_edit_view"  # the modal's callback_id
SQL_BLOCK, SQL_INPUT = "sql", "sql"
DATABASE_BLOCK, DATABASE_INPUT = "database", "database"
# A plain_text_input holds at most 3,000 characters; longer SQL cannot be edited in Slack.
MAX_EDIT_CHARS = 3_000
_LABEL_CHARS = 75  # button and option text
_RAN_SQL_CHARS = 1_500


def _label(text: str) -> str:
    return text if len(text) <= _LABEL_CHARS else text[: _LABEL_CHARS - 1] + "…"


def database_option(database: DatabaseConfig) -> dict[str, Any]:
    text = _label(f"{database.name} ({database.environment})")
    return {"text": plain(text, emoji=False), "value": database.name}


def _select(
    action_id: str, databases: Sequence[DatabaseConfig], initial: str | None
) -> dict[str, Any]:
    select: dict[str, Any] = {
        "type": "static_select",
        "action_id": action_id,
        "placeholder": plain("Choose a database"),
        "options": [database_option(database) for database in databases[:100]],
    }
    chosen = next((database for database in databases if database.name == initial), None)
    if chosen is not None:
        select["initial_option"] = database_option(chosen)
    return select


def sql_actions(
    proposal_id: str, database: str | None, databases: Sequence[DatabaseConfig]
) -> Block:
    """The buttons under one SQL block; a database menu when the answer does not say."""
    run: dict[str, Any] = {
        "type": "button",
        "action_id": RUN,
        "text": plain(_label(f"Run on {database}") if database else "Run", emoji=False),
        "style": "primary",
        "value": proposal_id,
    }
    edit = {"type": "button", "action_id": EDIT, "text": plain("Edit & run"), "value": proposal_id}
    elements: list[dict[str, Any]] = [run, edit]
    if database is None:
        elements.insert(0, _select(CHOOSE_DATABASE, databases, None))
    return {"type": "actions", "block_id": f"{ACTIONS_PREFIX}{proposal_id}", "elements": elements}


def more_sql_note(shown: int) -> Block:
    return context(f"Run buttons are on the first {shown} SQL blocks of this answer only.")


def edit_view(
    proposal_id: str, sql: str, databases: Sequence[DatabaseConfig], database: str | None
) -> dict[str, Any]:
    """The Edit & run modal: the SQL in a multi-line input and the database menu. Its
    metadata is the proposal's id alone (the thread to answer in comes from the store)."""
    return {
        "type": "modal",
        "callback_id": EDIT_VIEW,
        "private_metadata": json.dumps({"proposal": proposal_id}),
        "title": plain("Edit & run"),
        "submit": plain("Run"),
        "close": plain("Cancel"),
        "blocks": [
            {
                "type": "input",
                "block_id": SQL_BLOCK,
                "label": plain("SQL"),
                "element": {
                    "type": "plain_text_input",
                    "action_id": SQL_INPUT,
                    "multiline": True,
                    "max_length": MAX_EDIT_CHARS,
                    "initial_value": sql,
                },
            },
            {
                "type": "input",
                "block_id": DATABASE_BLOCK,
                "label": plain("Database"),
                "element": _select(DATABASE_INPUT, databases, database),
            },
            context(
                "Runs as you, through the same checks as the bot: reads run at once, "
                "changes wait for an approver, production is never changed."
            ),
        ],
    }


def proposal_of_view(view: dict[str, Any]) -> str | None:
    try:
        proposal = json.loads(view.get("private_metadata") or "{}").get("proposal")
    except (ValueError, AttributeError):
        return None
    return proposal if isinstance(proposal, str) and proposal else None


def _ran_sql(sql: str) -> str:
    shown, cut = mrkdwn.truncate(mrkdwn.code_text(trim_sql(sql)), _RAN_SQL_CHARS)
    return code_block(shown) + ("\n_(cut here)_" if cut else "")


def ran_message(user: str, sql: str, summary: str, *, edited: bool) -> dict[str, Any]:
    """What a person's Run did: who, the SQL, and the outcome ("Ran on db: 3 rows …")."""
    how = "edited and ran" if edited else "ran"
    line = f":arrow_forward: {person(user)} {how}: {mrkdwn.escape(summary)}"
    line = mrkdwn.truncate(line, 1_000)[0]
    return {"text": line, "blocks": [markdown_section(f"{line}\n{_ran_sql(sql)}")]}


def refused_message(user: str, sql: str, reason: str) -> dict[str, Any]:
    """A Run the guard refused (production write, transaction control, unknown database)."""
    said = mrkdwn.escape(strings.refusal(reason))
    line = strings.REFUSED_RUN.format(who=person(user), reason=said)
    line = mrkdwn.truncate(line, 1_000)[0]
    return {"text": line, "blocks": [markdown_section(f"{line}\n{_ran_sql(sql)}")]}
