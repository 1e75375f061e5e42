"""The model server answers a real chat-completions request with a call of a tiny probe tool,
so a model (or server) without tool calling is caught before the first question."""

from __future__ import annotations

import time

from bot.app import model_configured
from bot.check.lines import Line, failed, passed
from bot.config import Settings

MODEL_TIMEOUT_S = 60.0
PROBE_TOOL_NAME = "report_status"
PROBE_TOOL = {
    "type": "function",
    "function": {
        "name": PROBE_TOOL_NAME,
        "description": "Report that tool calling works. Always call this tool.",
        "parameters": {
            "type": "object",
            "properties": {"status": {"type": "string", "enum": ["ok"]}},
            "required": ["status"],
        },
    },
}
PROBE_MESSAGES = [
    {
        "role": "system",
        "content": "You are checking that tool calling works. Call the report_status tool "
        "with status ok. Do not answer in text.",
    },
    {"role": "user", "content": "Call report_status now."},
]


async def model_line(settings: Settings) -> Line:
    subject = f"model {settings.openai_model}"
    if not model_configured(settings):
        return failed(
            subject,
            "no model server configured",
            "set OPENAI_BASE_URL (any OpenAI-compatible server) and OPENAI_MODEL, or "
            "OPENAI_API_KEY for OpenAI's own",
        )
    from bot.agent.model import ModelError, build_model_client

    limits = settings.limits.model_copy(
        update={
            "model_max_retries": min(1, settings.limits.model_max_retries),
            "model_timeout_s": min(MODEL_TIMEOUT_S, settings.limits.model_timeout_s),
        }
    )
    client = build_model_client(settings.model_copy(update={"limits": limits}))
    where = settings.openai_base_url or "OpenAI"
    started = time.perf_counter()
    try:
        turn = await client.complete(PROBE_MESSAGES, [PROBE_TOOL])
    except ModelError as exc:
        return failed(
            subject,
            str(exc),
            "check OPENAI_BASE_URL, OPENAI_MODEL and OPENAI_API_KEY, and that the server runs",
        )
    finally:
        await client.close()
    seconds = time.perf_counter() - started
    if any(call.name == PROBE_TOOL_NAME for call in turn.tool_calls):
        return passed(subject, f"{where} answered with a tool call in {seconds:.1f} s")
    answered = "with a call of another tool" if turn.tool_calls else "in text, without a tool call"
    return failed(
        subject,
        f"{where} answered {answered}; the bot needs tool (function) calling",
        "use a model that supports tool calling, and enable it on the server "
        "(vLLM: --enable-auto-tool-choice --tool-call-parser …; llama.cpp: --jinja)",
    )
