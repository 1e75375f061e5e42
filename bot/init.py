"""`dbagent init`: write the commented example configuration, shipped inside the package, to
the current directory — never over a file that is already there."""

from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path

EXAMPLE = "dbagent.example.toml"


def example_text() -> str:
    """The example configuration as the installed package carries it."""
    return resources.files("bot").joinpath(EXAMPLE).read_text(encoding="utf-8")


def init_main(args: list[str], directory: Path | None = None) -> int:
    if args:
        print(f"dbagent: init takes no arguments, not {' '.join(args)!r}", file=sys.stderr)
        return 2
    target = (directory or Path.cwd()) / EXAMPLE
    try:
        with target.open("x", encoding="utf-8") as file:  # "x": never overwrite
            file.write(example_text())
    except FileExistsError:
        print(f"dbagent: {target} already exists; left as it is", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"dbagent: cannot write {target}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    print(
        f"wrote {target}\n"
        f"next: cp {EXAMPLE} dbagent.toml, name a database and the model in it, set the Slack "
        "variables, then run dbagent check"
    )
    return 0
