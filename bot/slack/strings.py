"""Every sentence a person reads from dbagent in Slack, in one place.

Each says what happened and what the reader can do next; people appear as mentions
(`<@U…>`, `<!subteam^S…>`), never as bare IDs. Text the model reads stays in the tool
results (bot/agent); these are for people only. Templates take already-escaped mrkdwn
where they say so; people are formatted by `blocks.common.person`.
"""

from __future__ import annotations

import re

from bot import guard
from bot.slack import mrkdwn

# A Slack user ID standing alone: U or W, then capitals and digits, at least one digit
# (so words such as UNSIGNED stay words).
_BARE_ID = re.compile(r"(?<![<@^\w])([UW](?=[A-Z]*\d)[A-Z0-9]{6,})(?![\w>|])")


def mention_ids(text: str) -> str:
    """Escaped text (invisible characters marked) in which bare user IDs ("denied by
    U0ONCALL1") become mentions."""
    return _BARE_ID.sub(lambda match: f"<@{match.group(1)}>", mrkdwn.shown(text))


def plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}" if count == 1 else f"{count:,} {noun}s"


# -- a conversation -----------------------------------------------------------------------
HELP = (
    "Hi! Ask me about your databases in plain words, for example: "
    "_which tables hold orders on shop-staging?_"
)
QUEUED = "Queued: I'll get to this when I'm done with the request before it."
WAITING_FOR_STORE = (
    "My state store cannot be used now ({error}). I'll answer this as soon as it can."
)
STORE_GAVE_UP = (
    "I could not take this message: my state store could not be used for {minutes} "
    "minutes ({error}). Please ask again."
)
STORE_STOPPING = (
    "I am restarting and could not take this message while my state store could not be "
    "used. Please ask again in a minute."
)
CLICK_STORE_DOWN = (
    "I could not take this click: {error}. Nothing was done; please click again in a moment."
)
TOO_LONG = (
    "That message is too long for me ({length:,} characters; the limit is {limit:,}). "
    "Please shorten it and ask again."
)

# -- working on it, stopping ----------------------------------------------------------
WORKING = "Working on it…"
STOP_BUTTON = "Stop"
STOP_CONFIRM_TITLE = "Stop this request?"
STOP_CONFIRM_TEXT = (
    "The run is cancelled and a statement still running on the database is killed. "
    "Nothing more runs for this request."
)
STOP_KEEP_GOING = "Keep going"
STOPPED_BY = "Stopped by {who}. Nothing more runs for this request; ask again when you are ready."
STOPPED_WHILE_RUNNING = (
    "stopped by {who} while it ran: the running statement was killed on the server and did "
    "not finish. Check the data before running it again."
)
STOP_NOT_YOURS = (
    "Only the person who asked, or an approver, can stop this request. "
    "Ask {asker} if it should stop."
)
STOP_TOO_LATE = "Nothing was running to stop: this request has finished (or not started yet)."

# -- steps shown while a run works (task_update titles come from the agent) --------------
STEP_APPROVAL = "Waiting for approval"
# What closes a stream or working message a run left open when its process stopped.
STEP_CUT_OFF = "Cut off: the bot stopped while this ran"
CUT_OFF_RESUMED = "The bot stopped while this ran; it carries on below."
CUT_OFF_TOLD = "The bot stopped while this ran; what was running, and what to check, is below."

# -- results ------------------------------------------------------------------------------
RESULT_ROWS = "{database} — {rows}"
RESULT_TRUNCATED = "first {rows} (the query had more: add a filter or an aggregate to see all)"
RESULT_SHOWING = "Showing {what}; the CSV has every fetched row and column."
RESULT_SHOWN_ROWS = "{shown} rows"
RESULT_SHOWN_COLUMNS = "{shown} of {total} columns"
RESULT_NO_ROWS = "{database} — no rows"
RESULT_SQL = "SQL: {sql}"
CSV_FAILED = (
    "The rows from {database} could not be attached as a CSV file. "
    "Ask again in a moment to get the file."
)
CHART_REFUSED = "No chart: {reason}."
CHART_BLOCK_REFUSED = "Slack did not accept the chart, so the table is shown instead."
CHART_TOO_MANY_POINTS = (
    "the result has {rows} rows and a chart holds at most {limit}; ask for fewer points "
    "(group by week or month, or keep the top {limit})"
)
CHART_TRUNCATED = "the result was cut after {rows} rows, so a chart of it would be incomplete"
CHART_TOO_MANY_SLICES = (
    "a pie holds at most {limit} slices and the result has {rows}; keep the top {keep} "
    "and group the rest as “other”"
)
CHART_NOT_POSITIVE = "a pie needs values above zero and `{column}` holds {value}"
CHART_NULL = "`{column}` has empty (NULL) values; a chart needs a number for every point"
CHART_LABELS_COLLIDE = "two labels of `{column}` look the same once cut to {limit} characters"
CHART_NOT_NUMERIC = "`{column}` is not a number in every row"
CHART_SCALES_DIFFER = (
    "{small} and {large} differ too much in size to share one axis ({low:g} against "
    "{high:g}); ask for a chart of each"
)

# -- approvals ----------------------------------------------------------------------------
NOT_AN_APPROVER = "Only the configured approvers can approve or deny changes; nothing was done."
NO_APPROVERS = "No approvers are configured, so nobody can approve changes; nothing was done."
MEMBERSHIP_UNKNOWN = (
    "Slack could not tell me just now whether you are in the approvers' group, so nothing "
    "was done. Please click again in a minute."
)
APPROVAL_EXPIRED = "This approval request expired before anyone decided; nothing was done."
CARD_CLOSED = (
    "it was decided, replaced by a newer message, or the bot stopped while deciding it. "
    "This card runs nothing any more; the thread and the audit log (`python -m bot audit`) "
    "say what became of it."
)
ALREADY_DECIDED = (
    "This request is no longer pending (it was decided, or a newer message replaced it); "
    "nothing was done."
)
APPROVAL_COUNTED = (
    "Your approval is counted ({approvals} of {required}). The change runs when {more}; "
    "nothing has run yet."
)
CARD_NOT_POSTED = (
    "The approval card could not be posted (Slack answered `{error}`), so nobody could "
    "approve this change: it was dropped and not run. Ask again to get a new card."
)
RESULT_NOTE = ":information_source: Note: {note}."
CARD_WITHDRAWN_REASON = "the approval card could not be posted in Slack ({error})"
CARD_NOT_APPROVABLE = (
    ":no_entry: *Cannot be approved here:* the SQL is cut on this card and its full text "
    "could not be attached, and nobody should approve what they cannot read. Ask again to "
    "get a new card."
)
NO_UNDO = "This change cannot be undone from here any more; nothing was done."
UNDO_PREPARING = "Preparing the undo…"

# -- long answers -------------------------------------------------------------------------
LONG_ANSWER = (
    "The answer is long ({length:,} characters): this is its beginning, and the whole of "
    "it is attached below."
)
LONG_ANSWER_FILE = "The whole answer"
REFUSED_MESSAGE_FILE = "The message Slack would not take as a message"

# -- refusals and errors ------------------------------------------------------------------
PRODUCTION_READ_ONLY = (
    "Production is read-only for dbagent. Here is the SQL for your change process:"
)
TRANSACTION_CONTROL_REFUSED = (
    "dbagent runs each approved statement on its own, so BEGIN, COMMIT and ROLLBACK are "
    "not run. Send the change as plain statements and it goes to an approver."
)
NOT_RUN = "Nothing was run."
REFUSED_RUN = ":no_entry: {who}, this was not run. {reason}"
UNEXPECTED = (
    "Something went wrong on my side while answering, and nothing more ran. "
    "Ask again; if it keeps happening, the details are in the bot's log."
)

# -- App Home -----------------------------------------------------------------------------
HOME_TITLE = "dbagent"
HOME_INTRO = (
    "Ask me about your databases in plain words: mention *@dbagent* in a channel "
    "(I can run reads there, and changes after an approver clicks) or write to me here "
    "(I explore the schema and write the SQL, without running it)."
)
HOME_EXAMPLE = "For example: _@dbagent how many orders are pending on {database}?_"
HOME_DATABASES = "Databases you can ask about"
HOME_READ_ONLY = "read-only for dbagent"
HOME_NO_DATABASES = "No databases are configured yet: add them to dbagent.toml."
HOME_WAITING = "Waiting for your approval"
HOME_NOTHING_WAITING = "Nothing is waiting for your approval."
HOME_CARD_LINE = "*{database}* ({environment}) · asked by {who} · {age}\n{sql}"
HOME_OPEN_THREAD = "Open thread"
# The audit channel and Home show a change's SQL only when it was asked in a public channel.
PRIVATE_SQL = "(asked in a private conversation: its SQL is shown in the thread only)"
HOME_PRIVATE_SQL = "_Asked in a private conversation: its SQL is shown in the thread only._"
HOME_MORE_WAITING = "…and {count} more waiting; the oldest are shown first."

# -- suggested prompts in assistant threads -----------------------------------------------
PROMPTS_TITLE = "Try asking"
PROMPT_TABLES = "What tables are on {database}?"
PROMPT_RECENT = "Show the 10 most recent rows of the biggest table on {database}"
PROMPT_HELP = "What can you do?"
PROMPT_HELP_TEXT = "What can you do, and which databases can you reach?"


def refusal(reason: str) -> str:
    """The guard's refusal (written for the model) in words for the person who clicked:
    what happened and what they can do. Plain text; escape it for mrkdwn."""
    if reason == guard.PRODUCTION_WRITE:
        return PRODUCTION_READ_ONLY
    if reason == guard.TRANSACTION_CONTROL:
        return TRANSACTION_CONTROL_REFUSED
    text = reason.removeprefix("Blocked:").removeprefix("Error:").strip()
    text = text[:1].upper() + text[1:]
    if text and not text.endswith((".", "!", "?", ":")):
        text += "."
    return f"{text} {NOT_RUN}".strip()


def age(seconds: float) -> str:
    """ "just now", "4 min ago", "3 h ago", "2 days ago"."""
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86400:
        return f"{int(seconds // 3600)} h ago"
    days = int(seconds // 86400)
    return f"{days} day ago" if days == 1 else f"{days} days ago"
