"""The `vera` command: click commands, argument parsing, what the terminal shows, exit codes.

The top layer: it may import every package below it and nothing imports it.
"""

from vera.cli._main import main

__all__ = ["main"]
