"""The development renderer draws every block the bot sends (so a screenshot of it shows
what a person would see), and its samples are valid Slack."""

from __future__ import annotations

from pathlib import Path

from tests.slack.render import main, samples


def test_every_sample_renders_without_an_unknown_block(tmp_path: Path) -> None:
    assert main([str(tmp_path)]) == 0
    pages = {path.stem: path.read_text(encoding="utf-8") for path in tmp_path.glob("*.html")}
    assert set(pages) == set(samples())
    for name, page in pages.items():
        assert "unrendered block" not in page, name
    assert "<svg" in pages["result-chart"] and "<table" in pages["result-wide"]
    assert "Open thread" in pages["home"] and "Approve once" in pages["approval-card"]
