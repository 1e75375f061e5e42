"""Model text → Slack mrkdwn that is safe to post, and split to fit Slack's limits.

Slack reads `<…>` as mentions, links and commands (`<!channel>`), so `&`, `<` and `>` are
always escaped: nothing the model writes, or quotes from a database, can ping a channel or
hide a link. Outside code, the common Markdown the model writes is turned into mrkdwn
(`**bold**` → `*bold*`, headings → bold lines, bullets → `•`, `[label](url)` → `label (url)`
so that a link never hides where it goes). Inside code spans and fences nothing changes but
the escaping.
"""

from __future__ import annotations

import re

from bot.visible import visible

# Slack's limits: a message's text is cut after 40,000 characters, a section block's text
# may not exceed 3,000.
MESSAGE_TEXT_LIMIT = 40_000
SECTION_TEXT_LIMIT = 3_000

FENCE = "```"

_ENTITY_TAIL = re.compile(r"&[a-z]{0,3}$")
_FENCE_LINE = re.compile(r"^\s*```")
_INLINE_CODE = re.compile(r"(`+)(.+?)\1")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")
_BULLET = re.compile(r"^(\s*)[-*+]\s+")
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*|__(?=\S)(.+?)(?<=\S)__")
_ITALIC = re.compile(r"(?<![\w*])\*(?=[^\s*])([^*\n]+?)(?<=[^\s*])\*(?![\w*])")
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
_LINK = re.compile(r"\[([^\]\n]+)\]\(((?:https?://|mailto:)[^)\s]+)\)")
# Private-use characters stand in for bold markers while italics are converted.
_BOLD_OPEN, _BOLD_CLOSE = "\ue000", "\ue001"


def escape(text: str) -> str:
    """Escape the three characters Slack treats as control characters."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# Spaces other than the plain one: to the server a no-break space is part of a name, so it
# must not pass for the space that ends one. (visible() marks controls, format characters,
# separators and bidi controls.)
_UNUSUAL_SPACES = re.compile("[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]")


# What a one-line rendering folds: only the whitespace a reader can see. str.split() would
# also fold CR, U+2028, no-break spaces and the like, hiding the very characters `shown`
# makes visible.
_VISIBLE_WHITESPACE_RUN = re.compile(r"[ \t\n]+")


def shown(text: str) -> str:
    """Text from the model or a server, escaped, with every character that could hide or
    reorder what a reader sees marked as <U+XXXX>."""
    marked = _UNUSUAL_SPACES.sub(lambda match: f"<U+{ord(match.group()):04X}>", visible(text))
    return escape(marked)


def one_line(text: str) -> str:
    """Text on one line, still raw (mark and escape it after cutting, so no marker is cut):
    runs of spaces, tabs and newlines become one space, and nothing invisible is folded away
    with them."""
    return _VISIBLE_WHITESPACE_RUN.sub(" ", text).strip(" ")


def code_text(text: str) -> str:
    """Text to show inside a ``` block exactly as it is: escaped, with anything that could
    end the block early (a ``` of its own) broken up, and invisible characters made visible,
    so an approver reads the statement that will run and nothing else."""
    return shown(text).replace("```", "`\u200b`\u200b`")


def sql_inline(sql: str, limit: int) -> str:
    """SQL on one line of text, exactly as it runs, marked the same way on every surface
    (the audit channel, Home, a result's context): fenced as code, so a backtick in it is a
    backtick; invisible characters marked as on the card; cut at `limit` characters with "…"
    before marking (no marker is cut)."""
    flat = one_line(sql)
    cut = flat if len(flat) <= limit else flat[: limit - 1] + "…"
    text = code_text(cut)
    if text.startswith("`") or text.endswith("`"):
        text = f" {text} "  # a backtick beside the fence would lengthen it
    return f"```{text}```"


def to_mrkdwn(markdown: str) -> str:
    """Convert the model's Markdown to escaped mrkdwn; code is escaped and otherwise intact.

    Fences are normalised to lines of their own without a language tag (Slack would show
    the tag as code); an unclosed fence is closed at the end.
    """
    out: list[str] = []
    in_code = False
    for line in markdown.replace("\r\n", "\n").split("\n"):
        if _FENCE_LINE.match(line):
            rest = line.strip()[len(FENCE) :]
            if in_code:
                # "```" closes; text after it on the same line becomes prose.
                out.append(FENCE)
                in_code = False
                tail = rest.lstrip("`").strip()
                if tail:
                    out.append(_prose_line(tail))
            elif rest.endswith(FENCE) and len(rest) > len(FENCE) - 1 and rest.strip("`"):
                # ```code``` on one line.
                out.extend([FENCE, escape(rest[: -len(FENCE)]), FENCE])
            else:
                out.append(FENCE)
                in_code = True
                if rest and not _is_language_tag(rest):
                    out.append(escape(rest))
            continue
        out.append(escape(line) if in_code else _prose_line(line))
    if in_code:
        out.append(FENCE)
    return "\n".join(out).strip("\n")


def _is_language_tag(text: str) -> bool:
    return re.fullmatch(r"[\w+#.-]{1,20}", text.strip()) is not None


def _prose_line(line: str) -> str:
    """One line outside a fence: inline code kept, the rest converted."""
    pieces: list[str] = []
    position = 0
    for match in _INLINE_CODE.finditer(line):
        pieces.append(_convert(line[position : match.start()]))
        pieces.append("`" + escape(match.group(2)) + "`")
        position = match.end()
    pieces.append(_convert(line[position:]))
    return "".join(pieces)


def _convert(text: str) -> str:
    if not text:
        return text
    heading = _HEADING.match(text)
    if heading:
        text = f"**{heading.group(1).strip('*')}**"
    text = _BULLET.sub(r"\1• ", text)
    text = _LINK.sub(lambda m: f"{m.group(1)} ({m.group(2)})", text)
    text = _BOLD.sub(lambda m: _BOLD_OPEN + (m.group(1) or m.group(2)) + _BOLD_CLOSE, text)
    text = _ITALIC.sub(r"_\1_", text)
    text = _STRIKE.sub(r"~\1~", text)
    text = text.replace(_BOLD_OPEN, "*").replace(_BOLD_CLOSE, "*")
    return escape(text)


def split(text: str, limit: int = SECTION_TEXT_LIMIT) -> list[str]:
    """Split mrkdwn into pieces of at most `limit` characters.

    Cuts fall between lines where possible (after a blank line when one is in the second
    half of the piece), never inside an `&amp;`-style entity. A code block that spans a cut
    is closed before it and reopened after it, so every piece renders on its own.
    """
    if limit < 4 * len(FENCE) + 8:
        raise ValueError(f"limit {limit} is too small to split mrkdwn")
    text = text.strip("\n")
    if len(text) <= limit:
        return [text] if text.strip() else []
    return _Splitter(limit).run(text.split("\n"))


class _Splitter:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.pieces: list[str] = []
        self.lines: list[str] = []
        self.size = -1  # length of "\n".join(lines); -1 when empty
        self.in_code = False  # state after the last line in `lines`

    def run(self, lines: list[str]) -> list[str]:
        for line in lines:
            self.add(line)
        self.flush(reopen=False)
        return self.pieces

    def fits(self, line: str) -> bool:
        after = self.in_code != (line.strip() == FENCE)
        closing = len(FENCE) + 1 if after else 0
        return self.size + 1 + len(line) + closing <= self.limit

    def append(self, line: str) -> None:
        self.lines.append(line)
        self.size += 1 + len(line)
        if line.strip() == FENCE:
            self.in_code = not self.in_code

    def add(self, line: str) -> None:
        if self.fits(line):
            self.append(line)
            return
        if self.has_content():
            self.flush_at_paragraph()
            if self.fits(line):
                self.append(line)
                return
        # The line alone is too long: cut it.
        while not self.fits(line):
            room = self.limit - self.size - 1 - (len(FENCE) + 1 if self.in_code else 0)
            head, line = _cut(line, room)
            self.append(head)
            self.flush()
        self.append(line)

    def has_content(self) -> bool:
        return any(line.strip() and line.strip() != FENCE for line in self.lines)

    def flush_at_paragraph(self) -> None:
        """Flush, cutting after the last blank line of the second half when that line and
        everything after it lie outside code; else flush everything."""
        for index in range(len(self.lines) - 1, len(self.lines) // 2, -1):
            if self.lines[index].strip():
                continue
            tail = self.lines[index + 1 :]
            if self.in_code or any(line.strip() == FENCE for line in tail):
                break
            self.lines = self.lines[:index]
            self.size = len("\n".join(self.lines))
            self.flush()
            for line in tail:
                self.append(line)
            return
        self.flush()

    def flush(self, *, reopen: bool = True) -> None:
        lines = list(self.lines)
        while lines and not lines[-1].strip():
            lines.pop()
        if self.in_code:
            lines.append(FENCE)
        while lines and not lines[0].strip():
            lines.pop(0)
        if any(line.strip() and line.strip() != FENCE for line in lines):
            self.pieces.append("\n".join(lines))
        self.lines, self.size = [], -1
        if self.in_code and reopen:
            self.in_code = False
            self.append(FENCE)


def _cut(line: str, room: int) -> tuple[str, str]:
    """Cut a too-long line at a space near the end of `room`, else anywhere outside an
    entity; returns (head, rest)."""
    room = max(room, 1)
    window = line[:room]
    space = window.rfind(" ")
    if space >= room // 2:
        return window[:space], line[space + 1 :]
    entity = _ENTITY_TAIL.search(window)
    if entity and entity.start() > 0:
        return window[: entity.start()], line[entity.start() :]
    return window, line[room:]


def truncate(text: str, limit: int, marker: str = "…") -> tuple[str, bool]:
    """Cut escaped text to at most `limit` characters (marker included), never inside an
    entity; returns (text, was_cut)."""
    if len(text) <= limit:
        return text, False
    head = text[: max(limit - len(marker), 0)]
    entity = _ENTITY_TAIL.search(head)
    if entity:
        head = head[: entity.start()]
    return head + marker, True
