"""The `vera` command: click commands, argument parsing, what the terminal shows, exit codes.

The top layer: it may import every package below it and nothing imports it.
"""

import sys

try:
    from vera.cli._main import main
except KeyboardInterrupt:
    # Ctrl-C in the second or two the imports take (polars, numpy, aiohttp, ...): nothing
    # has started, so one line and the exit code of an interrupt, not a traceback from
    # deep inside a library. The locale is not known yet: English.
    print("vera: interrupted while starting; nothing was done", file=sys.stderr)
    raise SystemExit(130) from None

__all__ = ["main"]
