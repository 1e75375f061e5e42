"""Fakes of the services dbagent talks to: an OpenAI-compatible model server (and Slack)."""
