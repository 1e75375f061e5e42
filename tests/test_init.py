"""`dbagent init`: the commented example, as the package ships it, written to the current
directory, and never over a file already there."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.__main__ import main

REPOSITORY = Path(__file__).resolve().parent.parent


def test_init_writes_the_example_configuration_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["init"]) == 0
    written = (tmp_path / "dbagent.example.toml").read_text(encoding="utf-8")
    assert written == (REPOSITORY / "dbagent.example.toml").read_text(encoding="utf-8")
    assert "dbagent check" in capsys.readouterr().out


def test_init_never_overwrites(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dbagent.example.toml").write_text("# mine\n", encoding="utf-8")
    assert main(["init"]) == 2
    assert (tmp_path / "dbagent.example.toml").read_text(encoding="utf-8") == "# mine\n"
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "already exists" in err


def test_help_points_to_the_example_and_init(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "dbagent.example.toml" in out and "init" in out
