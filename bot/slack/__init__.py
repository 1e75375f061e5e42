"""The Slack app: Bolt listeners, Block Kit, results and approvals in threads.

Entry points: `bot.slack.app.build_app`, `bot.slack.server.build_web_app` and
`bot.slack.server.serve` (what `python -m bot` runs).

- `listeners/` — what happens on each delivery, by kind, the flow beside its listener:
  `events/` (a mention or message → `conversation.py`, one agent run), `actions/` (a
  click: `approval_card.py`, `question.py`, `sql_actions.py`), `views/` (a modal submitted).
- `blocks/` — Block Kit builders, plain functions returning dicts, one module per message.
- `delivery.py` posts in threads (and `answer_in_thread` ends every run); `status_line.py`
  is the "Working on it…" line; `clicks.py` reads a click and answers only the clicker.
- `sessions.py`, `open_messages.py`, `proposals.py`, `approvers.py`, `users.py` — threads,
  queues, and what the listeners remember.
"""
