"""ask_user: the model's question back to the person — confirm, choose, or free input.

The run pauses like an approval and resumes with {kind, answer, value} as the tool result.
Options are cleaned here, once: empty and duplicated ones are dropped, and a choose with no
valid option becomes an input question (a question with no choices can still be answered).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from bot.agent.tools.base import BOTH_MODES, Parameters, QuestionRequired, Tool, ToolContext

CONFIRM_OPTIONS = (("Yes", "yes"), ("No", "no"))
MAX_OPTIONS = 25  # a Slack select menu's limit per message is 100; more is not a question
MAX_LABEL = 75  # Slack button text limit


class OptionParameters(BaseModel):
    model_config = ConfigDict(extra="ignore")

    label: str = Field(description="What the person sees.")
    value: str | None = Field(default=None, description="Stable value returned; default label.")


class AskUserParameters(Parameters):
    kind: Literal["confirm", "choose", "input"] = Field(
        description="confirm: yes/no; choose: pick one of options; input: free text reply."
    )
    question: str = Field(min_length=1, description="The question, in one or two sentences.")
    options: list[OptionParameters] = Field(
        default_factory=list, description="For choose: the choices, each {label, value}."
    )


def clean_options(options: list[OptionParameters]) -> tuple[tuple[str, str], ...]:
    kept: list[tuple[str, str]] = []
    seen_labels: set[str] = set()
    seen_values: set[str] = set()
    for option in options:
        label = " ".join(option.label.split())[:MAX_LABEL]
        value = (option.value if option.value is not None else option.label).strip()
        if not label or not value or label in seen_labels or value in seen_values:
            continue
        seen_labels.add(label)
        seen_values.add(value)
        kept.append((label, value))
    return tuple(kept[:MAX_OPTIONS])


async def ask_user(context: ToolContext, args: AskUserParameters) -> QuestionRequired:
    question = " ".join(args.question.split())
    if args.kind == "confirm":
        return QuestionRequired("confirm", question, CONFIRM_OPTIONS)
    if args.kind == "choose":
        options = clean_options(args.options)
        if options:
            return QuestionRequired("choose", question, options)
    return QuestionRequired("input", question, ())


ASK_USER_TOOLS = (
    Tool(
        name="ask_user",
        description=(
            "Ask the person a question and wait for the answer: kind=confirm (yes/no), "
            "kind=choose with options [{label, value}], or kind=input (they reply in the "
            "thread). Use it when the request is ambiguous (which database? which rows?) "
            "instead of guessing. The result is {kind, answer, value}."
        ),
        parameters=AskUserParameters,
        handler=ask_user,
        modes=BOTH_MODES,
        concurrent=False,
        progress=lambda args: "Waiting for your answer…",
    ),
)
