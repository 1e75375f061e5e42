"""The Slack app: Bolt listeners, Block Kit, results and approvals in threads.

Entry points: `bot.slack.app.build_app`, `bot.slack.server.build_web_app` and
`bot.slack.server.serve` (what `python -m bot` runs).

- `listeners/` — what happens on each delivery, by kind, the flow beside its listener:
  `events/` (a mention or message → `conversation.py`, one agent run), `actions/` (a
  click: `approval_card.py`, `question.py`, `sql_actions.py`, `undo.py`), `views/` (a modal
  submitted).
- `blocks/` — Block Kit builders, plain functions returning dicts, one module per message.
- `outcome.py` ends every run (`answer_in_thread`); `delivery.py` posts in threads and
  falls back to plainer forms; `cards.py` posts and announces approval cards;
  `status_line.py` is the "Working on it…" line; `clicks.py` reads a click and answers
  only the clicker.
- `web_api.py` — the Slack client: timeouts, retries, per-channel pacing; `server.py` —
  HTTP or Socket Mode, `/health`, stopping; `payloads.py` — the shape a signed request
  must have; `recovery.py` — what the threads hear at start.
- `sessions.py`, `open_messages.py`, `proposals.py`, `approvers.py`, `users.py` — threads,
  queues, and what the listeners remember.
"""
