"""Render the bot's Block Kit as a person would roughly see it in Slack, to check by eye.

A development aid, not Slack: mrkdwn, the markdown block, tables, charts (as SVG), buttons
and the Home tab are drawn with plain HTML, close enough to judge what reads badly.

    python -m tests.slack.render OUT_DIR            # HTML files
    python -m tests.slack.render OUT_DIR --png      # and PNG screenshots (headless Chromium)
"""

from __future__ import annotations

import html
import math
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from bot.agent.outcomes import QueryResult
from bot.changes.types import PendingApproval
from bot.config import DatabaseConfig, Environment
from bot.slack.blocks.answer import answer_message
from bot.slack.blocks.approval_card import approval_card
from bot.slack.blocks.home import WaitingCard, home_view
from bot.slack.blocks.result_table import result_message
from bot.slack.blocks.working import working_message

Block = dict[str, Any]
EMOJI = {
    ":red_circle:": "🔴",
    ":large_yellow_circle:": "🟡",
    ":large_green_circle:": "🟢",
    ":white_circle:": "⚪",
    ":lock:": "🔒",
    ":hourglass_flowing_sand:": "⏳",
    ":octagonal_sign:": "🛑",
    ":warning:": "⚠️",
    ":no_entry:": "⛔",
}
NAMES = {"U0ASKER": "ada", "U0APPROVER": "grace", "S0ONCALL": "oncall"}
_BULLET = re.compile(r"^\s*[-*]\s+")
COLOURS = ["#2d7ff9", "#e8912d", "#2bac76", "#cd2553", "#8c5bd6", "#4a4a4a"]
STYLE = """
body { font: 15px/1.45 -apple-system, 'Segoe UI', Lato, sans-serif; color: #1d1c1d;
       background: #fff; margin: 0; padding: 16px 20px; width: 760px; }
.msg { display: flex; gap: 10px; margin-bottom: 18px; }
.avatar { width: 36px; height: 36px; border-radius: 6px; background: #1d3557; color: #fff;
          font-weight: 700; display: flex; align-items: center; justify-content: center; }
.who { font-weight: 900; } .who small { color: #616061; font-weight: 400; margin-left: 6px; }
.body { flex: 1; min-width: 0; }
.block { margin: 4px 0; }
.context { color: #616061; font-size: 13px; }
.header { font-size: 18px; font-weight: 900; margin: 8px 0 4px; }
.fields { display: grid; grid-template-columns: 1fr 1fr; gap: 8px 24px; }
pre { background: #f8f8f8; border: 1px solid #ddd; border-radius: 4px; padding: 8px;
      white-space: pre-wrap; font: 13px/1.4 Monaco, Menlo, monospace; margin: 4px 0; }
code { background: #f3f3f3; border: 1px solid #e0e0e0; border-radius: 3px; color: #c01343;
       font: 12px Monaco, Menlo, monospace; padding: 0 3px; }
.mention { background: #e8f5fa; color: #1264a3; border-radius: 3px; padding: 0 2px; }
.button { display: inline-block; border: 1px solid #bbb; border-radius: 4px; padding: 3px 12px;
          margin: 4px 8px 4px 0; font-weight: 700; font-size: 14px; }
.primary { background: #007a5a; color: #fff; border-color: #007a5a; }
.danger { background: #e01e5a; color: #fff; border-color: #e01e5a; }
table.t { border-collapse: collapse; font-size: 13px; margin: 6px 0; }
table.t td, table.t th { border: 1px solid #ddd; padding: 4px 8px; white-space: nowrap;
                         max-width: 260px; overflow: hidden; text-overflow: ellipsis; }
table.t th { background: #f6f6f6; }
hr { border: none; border-top: 1px solid #ddd; margin: 12px 0; }
.chart { border: 1px solid #ddd; border-radius: 6px; padding: 8px; margin: 6px 0; }
.chart h4 { margin: 0 0 4px; }
.legend span { margin-right: 12px; font-size: 12px; }
.legend i { display: inline-block; width: 10px; height: 10px; margin-right: 4px; }
.file { border: 1px solid #ddd; border-radius: 6px; padding: 8px; width: 300px;
        font-size: 13px; }
.home { border: 1px solid #ddd; border-radius: 8px; padding: 12px 16px; }
.accessory { float: right; }
"""


def mrkdwn(text: str) -> str:
    """Slack's mrkdwn, roughly: the text arrives escaped (&amp; &lt; &gt;)."""
    blocks: list[str] = []

    def keep(match: re.Match[str]) -> str:
        blocks.append(f"<pre>{match.group(1).strip(chr(10))}</pre>")
        return f"\0{len(blocks) - 1}\0"

    text = re.sub(r"```(.*?)```", keep, text, flags=re.S)
    text = re.sub(r"`([^`]+)`", r"<code>\1</code>", text)
    text = re.sub(r"&lt;@(\w+)&gt;", r"&lt;@\1&gt;", text)  # an escaped mention stays text
    text = re.sub(
        r"<@(\w+)>", lambda m: f"<span class=mention>@{NAMES.get(m[1], m[1])}</span>", text
    )
    text = re.sub(
        r"<!subteam\^(\w+)>",
        lambda m: f"<span class=mention>@{NAMES.get(m[1], m[1])}</span>",
        text,
    )
    text = re.sub(r"<!date\^\d+\^[^|]*\|([^>]*)>", r"\1", text)
    text = re.sub(r"<(https?://[^|>]+)\|([^>]+)>", r'<a href="\1">\2</a>', text)
    text = re.sub(r"(?<![\w*])\*([^*\n]+)\*(?![\w*])", r"<b>\1</b>", text)
    text = re.sub(r"(?<![\w_])_([^_\n]+)_(?![\w_])", r"<i>\1</i>", text)
    for code, emoji in EMOJI.items():
        text = text.replace(code, emoji)
    text = text.replace("\n", "<br>")
    return re.sub(r"\0(\d+)\0", lambda m: blocks[int(m[1])], text)


def markdown(text: str) -> str:
    """Standard Markdown, roughly: headings, lists, tables, code, bold, italic."""
    out: list[str] = []
    lines = text.split("\n")
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.startswith("```"):
            end = index + 1
            while end < len(lines) and not lines[end].startswith("```"):
                end += 1
            out.append(f"<pre>{html.escape(chr(10).join(lines[index + 1 : end]))}</pre>")
            index = end + 1
            continue
        if line.startswith("|") and index + 1 < len(lines) and set(lines[index + 1]) <= set("|-: "):
            rows = []
            while index < len(lines) and lines[index].startswith("|"):
                rows.append([c.strip() for c in lines[index].strip("|").split("|")])
                index += 1
            head, body = rows[0], rows[2:]
            cells = "".join(f"<th>{_inline(c)}</th>" for c in head)
            trs = "".join(
                "<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in row) + "</tr>" for row in body
            )
            out.append(f"<table class=t><tr>{cells}</tr>{trs}</table>")
            continue
        heading = re.match(r"(#{1,6})\s+(.*)", line)
        if heading:
            out.append(f"<div class=header>{_inline(heading[2])}</div>")
        elif _BULLET.match(line):
            out.append(f"<div>• {_inline(_BULLET.sub('', line))}</div>")
        elif line.strip():
            out.append(f"<div>{_inline(line)}</div>")
        index += 1
    return "".join(out)


def _inline(text: str) -> str:
    text = html.escape(text.replace("\u200b", ""))
    text = re.sub(r"`([^`]+)`", r"<code>\1</code>", text)
    text = re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", text)
    return re.sub(r"(?<!\*)\*([^*]+)\*(?!\*)", r"<i>\1</i>", text)


def text_object(obj: dict[str, Any]) -> str:
    if obj.get("type") == "plain_text":
        text = html.escape(obj["text"])
        for code, emoji in EMOJI.items():
            text = text.replace(code, emoji)
        return text
    return mrkdwn(obj["text"])


def button(element: dict[str, Any]) -> str:
    style = element.get("style", "")
    if element.get("type") == "static_select":
        return f"<span class=button>{text_object(element['placeholder'])} ▾</span>"
    return f"<span class='button {style}'>{text_object(element['text'])}</span>"


def table(block: Block) -> str:
    aligns = [s.get("align", "left") for s in block.get("column_settings") or []]
    rows = []
    for number, row in enumerate(block["rows"]):
        tag = "th" if number == 0 else "td"
        cells = "".join(
            f"<{tag} style='text-align:{aligns[i] if i < len(aligns) else 'left'}'>"
            f"{html.escape(_cell(cell))}</{tag}>"
            for i, cell in enumerate(row)
        )
        rows.append(f"<tr>{cells}</tr>")
    return f"<table class=t>{''.join(rows)}</table>"


def _cell(cell: dict[str, Any]) -> str:
    if cell["type"] == "rich_text":
        return "".join(run.get("text", "") for run in cell["elements"][0]["elements"])
    return str(cell["text"])


def chart(block: Block) -> str:
    spec = block["chart"]
    width, height, pad = 640, 240, 40
    if spec["type"] == "pie":
        return _pie(block["title"], spec["segments"])
    categories = spec["axis_config"]["categories"]
    series = spec["series"]
    top = max(max(p["value"] for p in s["data"]) for s in series) or 1
    step = (width - 2 * pad) / max(len(categories), 1)
    shapes = []
    for number, one in enumerate(series):
        colour = COLOURS[number % len(COLOURS)]
        points = [
            (pad + step * (i + 0.5), height - pad - (p["value"] / top) * (height - 2 * pad))
            for i, p in enumerate(one["data"])
        ]
        if spec["type"] == "bar":
            bar = step * 0.8 / len(series)
            for i, (_, y) in enumerate(points):
                left = pad + step * i + step * 0.1 + bar * number
                shapes.append(
                    f"<rect x={left:.1f} y={y:.1f} width={bar:.1f} "
                    f"height={height - pad - y:.1f} fill='{colour}'/>"
                )
        else:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
            if spec["type"] == "area":
                base = f"{points[-1][0]:.1f},{height - pad} {points[0][0]:.1f},{height - pad}"
                shapes.append(f"<polygon points='{path} {base}' fill='{colour}' opacity=.35/>")
            shapes.append(f"<polyline points='{path}' fill=none stroke='{colour}' stroke-width=2/>")
    labels = "".join(
        f"<text x={pad + step * (i + 0.5):.1f} y={height - pad + 16} font-size=11 "
        f"text-anchor=middle>{html.escape(c)}</text>"
        for i, c in enumerate(categories)
    )
    axis = (
        f"<line x1={pad} y1={height - pad} x2={width - pad} y2={height - pad} stroke='#999'/>"
        f"<text x={pad - 4} y={pad} font-size=11 text-anchor=end>{top:g}</text>"
        f"<text x={pad - 4} y={height - pad} font-size=11 text-anchor=end>0</text>"
    )
    legend = "".join(
        f"<span><i style='background:{COLOURS[n % len(COLOURS)]}'></i>"
        f"{html.escape(s['name'])}</span>"
        for n, s in enumerate(series)
    )
    return (
        f"<div class=chart><h4>{html.escape(block['title'])}</h4>"
        f"<svg width={width} height={height}>{axis}{''.join(shapes)}{labels}</svg>"
        f"<div class=legend>{legend}</div></div>"
    )


def _pie(title: str, segments: list[dict[str, Any]]) -> str:
    total = sum(s["value"] for s in segments)
    angle, arcs, legend = -math.pi / 2, [], []
    for number, segment in enumerate(segments):
        colour = COLOURS[number % len(COLOURS)]
        sweep = 2 * math.pi * segment["value"] / total
        x1, y1 = 110 + 90 * math.cos(angle), 110 + 90 * math.sin(angle)
        angle += sweep
        x2, y2 = 110 + 90 * math.cos(angle), 110 + 90 * math.sin(angle)
        large = 1 if sweep > math.pi else 0
        arcs.append(
            f"<path d='M110,110 L{x1:.1f},{y1:.1f} A90,90 0 {large} 1 {x2:.1f},{y2:.1f} Z' "
            f"fill='{colour}'/>"
        )
        legend.append(
            f"<span><i style='background:{colour}'></i>{html.escape(segment['label'])} "
            f"({100 * segment['value'] / total:.0f}%)</span>"
        )
    return (
        f"<div class=chart><h4>{html.escape(title)}</h4><svg width=220 height=220>"
        f"{''.join(arcs)}</svg><div class=legend>{''.join(legend)}</div></div>"
    )


def block_html(block: Block) -> str:
    kind = block["type"]
    if kind == "section":
        parts = []
        if "accessory" in block:
            parts.append(f"<span class=accessory>{button(block['accessory'])}</span>")
        if "text" in block:
            parts.append(text_object(block["text"]))
        if "fields" in block:
            fields = "".join(f"<div>{text_object(f)}</div>" for f in block["fields"])
            parts.append(f"<div class=fields>{fields}</div>")
        return "".join(parts)
    if kind == "context":
        return f"<div class=context>{' '.join(text_object(e) for e in block['elements'])}</div>"
    if kind == "header":
        return f"<div class=header>{text_object(block['text'])}</div>"
    if kind == "divider":
        return "<hr>"
    if kind == "actions":
        return "".join(button(e) for e in block["elements"])
    if kind == "table":
        return table(block)
    if kind == "data_visualization":
        return chart(block)
    if kind == "markdown":
        return markdown(block["text"])
    return f"<pre>unrendered block {html.escape(kind)}</pre>"


def message_html(message: dict[str, Any], *, file: str | None = None) -> str:
    blocks = "".join(f"<div class=block>{block_html(b)}</div>" for b in message["blocks"])
    attached = f"<div class=file>📄 <b>{html.escape(file)}</b><br>CSV</div>" if file else ""
    return (
        "<div class=msg><div class=avatar>db</div><div class=body>"
        "<div class=who>dbagent <small>APP 3:12 AM</small></div>"
        f"{blocks}{attached}</div></div>"
    )


def page(title: str, body: str) -> str:
    return (
        f"<!doctype html><meta charset=utf-8><title>{html.escape(title)}</title>"
        f"<style>{STYLE}</style>{body}"
    )


def samples() -> dict[str, str]:
    """The pages to look at: a result with a chart, a wide result, the approval card, a
    working message, an answer, and an approver's Home tab."""
    extras = tuple(f"extra_{i}" for i in range(18))
    by_status = QueryResult(
        database="shop-staging",
        sql="SELECT status, SUM(total) AS revenue, MAX(total) AS biggest\nFROM orders\n"
        "GROUP BY status ORDER BY status",
        columns=("status", "revenue", "biggest"),
        rows=(
            ("paid", "20.00", "20.00"),
            ("pending", "17.50", "12.00"),
            ("shipped", "99.99", "99.99"),
        ),
        truncated=False,
        chart={"type": "bar", "x": "status", "y": ["revenue", "biggest"], "title": "Revenue"},
    )
    columns = ("id", "customer", "status", "total", "note", "created_at", *extras)
    wide = QueryResult(
        database="shop-staging",
        sql="SELECT * FROM orders ORDER BY id",
        columns=columns,
        rows=tuple(
            (
                10 + i,
                ["Ada", "Ada & Co <ltd>", "Linus", '=HYPERLINK("x")'][i % 4],
                ["paid", "pending", "shipped"][i % 3],
                f"{(i * 7.25) % 100:.2f}",
                None if i % 2 else "left at the door, ring twice " * 6,
                f"2026-11-{1 + i:02d} 03:{i:02d}:00",
                *range(18),
            )
            for i in range(25)
        ),
        truncated=True,
    )
    pending = PendingApproval(
        id="a1b2c3",
        session_id="T0TEAM:C0SHOP:1700000001.000100",
        tool_call_id="call_1",
        database="shop-staging",
        environment="staging",
        risk="write",
        sql="UPDATE orders SET status = 'paid' WHERE id = 11",
        requester="U0ASKER",
        created_at=1_700_000_000,
        reason="Changes on staging need an approver's click.",
    )
    databases = [
        DatabaseConfig(
            name="shop-staging",
            url="mysql://u@h/d",
            environment=Environment.STAGING,
            description="Orders and customers, staging copy",
        ),
        DatabaseConfig(
            name="shop-prod",
            url="mysql://u@h/d",
            environment=Environment.PRODUCTION,
            description="Orders and customers, live",
        ),
    ]
    home = home_view(
        databases,
        [WaitingCard(pending, "https://example.slack.com/archives/C0SHOP/p1700000001000100", True)],
        now=1_700_000_000 + 1_500,
    )
    answer = answer_message(
        "## Pending orders\n\nTwo orders are **pending**, worth 17.50 in all:\n\n"
        "| id | customer | total |\n|---|---|---|\n"
        "| 11 | Ada & Co | 5.50 |\n| 12 | Linus | 12.00 |\n\n"
        "```sql\nSELECT id, customer, total FROM orders WHERE status = 'pending'\n```"
    )
    return {
        "result-chart": message_html(
            result_message(by_status, 20), file="shop-staging-20261201-031200.csv"
        ),
        "result-wide": message_html(result_message(wide, 20), file="shop-staging.csv"),
        "approval-card": message_html(approval_card(pending)),
        "working": message_html(
            working_message("Running query on shop-staging…", pending.session_id)
        )
        + message_html(answer),
        "home": "<div class=home>"
        + "".join(f"<div class=block>{block_html(b)}</div>" for b in home["blocks"])
        + "</div>",
    }


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    for name, body in samples().items():
        target = out / f"{name}.html"
        target.write_text(page(name, body), encoding="utf-8")
        if "--png" in argv and chromium:
            subprocess.run(
                [
                    chromium,
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-background-networking",
                    "--hide-scrollbars",
                    "--window-size=800,900",
                    f"--screenshot={out / f'{name}.png'}",
                    target.resolve().as_uri(),
                ],
                check=True,
                capture_output=True,
                timeout=60,
            )
        print(target)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
