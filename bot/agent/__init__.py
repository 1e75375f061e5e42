"""The agent: a tool-calling loop over an OpenAI-compatible model, with ask and agent modes,
approval pauses and persisted sessions. It knows nothing of Slack."""

from bot.agent.agent import Agent
from bot.agent.model import ModelClient, ModelError, build_model_client
from bot.agent.outcomes import (
    Answer,
    AwaitingApproval,
    AwaitingReply,
    Failed,
    Interrupted,
    NotYourQuestion,
    Option,
    Outcome,
    Progress,
    QueryResult,
    Question,
    Recovered,
    Requester,
    RunInterrupted,
    RunResumable,
    Step,
    Stopped,
)
from bot.agent.sessions import Session, SessionStatus
from bot.agent.skills import Skill, Skills
from bot.changes.types import (
    AlreadyDecided,
    ApprovalDecision,
    ApprovalExpired,
    PendingApproval,
    SelfApprovalRefused,
)

__all__ = [
    "Agent",
    "AlreadyDecided",
    "Answer",
    "ApprovalDecision",
    "ApprovalExpired",
    "AwaitingApproval",
    "AwaitingReply",
    "Failed",
    "Interrupted",
    "ModelClient",
    "ModelError",
    "NotYourQuestion",
    "Option",
    "Outcome",
    "PendingApproval",
    "Progress",
    "QueryResult",
    "Question",
    "Recovered",
    "Requester",
    "RunInterrupted",
    "RunResumable",
    "SelfApprovalRefused",
    "Session",
    "SessionStatus",
    "Skill",
    "Skills",
    "Step",
    "Stopped",
    "build_model_client",
]
