"""The README's command reference keeps up with the CLI, and `--help` explains every option.

Every visible command has a row in the README's command table, and every option it
takes is named in that row: a user reading the reference should never have to find an
option in `--help` that the README leaves out. A row may say "same options as run" (the
`simulate` row): then it is checked against `vera run`'s row.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from vera.cli import main as cli

ROOT = Path(__file__).resolve().parents[1]
SAME_AS_RUN = "[...same options as run...]"


def commands(cmd: click.Command, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    if isinstance(cmd, click.Group):
        for name, sub in sorted(cmd.commands.items()):
            if not sub.hidden:
                yield from commands(sub, (*path, name))
    else:
        yield path, cmd


def rows_of(path: tuple[str, ...], rows: list[str]) -> list[str]:
    """The table rows whose command is `path` itself (not one of its subcommands)."""
    head = "| `" + " ".join(path)
    mine = []
    for row in rows:
        if not row.startswith(head):
            continue
        rest = row[len(head) :]
        # Next comes an argument, an option or the end of the command: a lower-case word
        # would be a subcommand (`vera ratings plan` is not `vera ratings`).
        word = rest.split()[0] if rest.split() else ""
        if rest.startswith("`") or word[:1] in ("[", "-", "`") or word[:1].isupper():
            mine.append(row)
    return mine


README_ROWS = [line for line in (ROOT / "README.md").read_text().splitlines() if line.startswith("| `vera ")]
COMMANDS = list(commands(cli, ("vera",)))


def test_the_table_is_found() -> None:
    # The check below can only fail if it reads the table: guard against a reformatted README.
    assert len(README_ROWS) >= 20
    assert len(COMMANDS) >= 20


@pytest.mark.parametrize(("path", "cmd"), COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_every_command_and_option_is_in_the_readme(path: tuple[str, ...], cmd: click.Command) -> None:
    rows = rows_of(path, README_ROWS)
    assert rows, f"README.md has no row for `{' '.join(path)}`"
    text = " ".join(rows)
    if SAME_AS_RUN in text:
        text += " ".join(rows_of(("vera", "run"), README_ROWS))
    missing = [
        "/".join(p.opts + p.secondary_opts)
        for p in cmd.params
        if isinstance(p, click.Option)
        and not p.hidden
        and p.name != "help"
        and not any(opt in text for opt in p.opts + p.secondary_opts)
    ]
    assert not missing, f"README.md's row for `{' '.join(path)}` does not name {', '.join(missing)}"


@pytest.mark.parametrize(("path", "cmd"), COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_every_option_says_what_it_does(path: tuple[str, ...], cmd: click.Command) -> None:
    silent = [
        p.opts[0]
        for p in cmd.params
        if isinstance(p, click.Option) and not p.hidden and p.name != "help" and not p.help
    ]
    assert not silent, f"`{' '.join(path)} --help` says nothing of {', '.join(silent)}"
