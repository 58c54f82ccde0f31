"""How the CLI fails and warns: ``CliError`` (one line, exit status 2) and ``warn``.

Every subcommand imports these from here, and ``cli.main`` catches them: the subcommands
never import ``cli.main`` back.
"""

from __future__ import annotations

import sys

from sparseety_tui.core.text import escape

PROG = "sparseety-tui"


class CliError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


def warn(message: str) -> None:
    """One line on stderr, shown literally (file names can hold terminal controls)."""
    print(f"{PROG}: {escape(message)}", file=sys.stderr)
