"""get_skill: workflow guides the model loads when it needs them, not in every prompt."""

from __future__ import annotations

from pydantic import Field

from bot.agent.tools.base import BOTH_MODES, Parameters, Tool, ToolContext, ToolReply, dumps


class SkillParameters(Parameters):
    name: str | None = Field(
        default=None, description="Skill to read; leave out to list the skills."
    )


async def get_skill(context: ToolContext, args: SkillParameters) -> ToolReply:
    skills = context.skills
    if not args.name:
        listing = [{"name": s.name, "description": s.description} for s in skills]
        return ToolReply(dumps({"skills": listing}))
    skill = skills.get(args.name)
    if skill is None:
        names = ", ".join(skills.names()) or "(none)"
        return ToolReply(f"Error: unknown skill {args.name!r}; skills: {names}")
    return ToolReply(skill.body)


SKILL_TOOLS = (
    Tool(
        name="get_skill",
        description=(
            "Read a workflow guide before a multi-step task (query, slow query, data fix). "
            "Without a name: the list of skills."
        ),
        parameters=SkillParameters,
        handler=get_skill,
        modes=BOTH_MODES,
        progress=lambda args: f"Reading the {args.name} guide…" if args.name else "",
    ),
)
