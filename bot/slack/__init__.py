"""The Slack app: Bolt listeners, Block Kit, results and approvals in threads.

Entry points: `bot.slack.app.build_app`, `bot.slack.server.build_web_app` and
`bot.slack.server.serve` (what `python -m bot` runs).
"""
