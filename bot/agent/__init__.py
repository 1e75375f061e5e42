"""The agent: a tool-calling loop over an OpenAI-compatible model, with ask and agent modes,
approval pauses and persisted sessions. It knows nothing of Slack."""

from bot.agent.agent import Agent
from bot.agent.model import ModelClient, ModelError, build_model_client
from bot.agent.outcomes import (
    AlreadyDecided,
    Answer,
    ApprovalDecision,
    AwaitingApproval,
    Failed,
    Outcome,
    PendingApproval,
    Progress,
    QueryResult,
    Requester,
)
from bot.agent.sessions import Session, SessionStatus
from bot.agent.skills import Skill, Skills

__all__ = [
    "Agent",
    "AlreadyDecided",
    "Answer",
    "ApprovalDecision",
    "AwaitingApproval",
    "Failed",
    "ModelClient",
    "ModelError",
    "Outcome",
    "PendingApproval",
    "Progress",
    "QueryResult",
    "Requester",
    "Session",
    "SessionStatus",
    "Skill",
    "Skills",
    "build_model_client",
]
