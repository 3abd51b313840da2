"""What the workflow's rules run: one module per step, each with a `python -m` entry point."""

from __future__ import annotations

import sys
from typing import Callable


def exit_status(step: str, action: Callable[[], None],
                errors: tuple[type[Exception], ...] = (ValueError,)) -> int:
    """Run a step's action: 0, or 1 with `step: message` on stderr when its input is bad (one of
    `errors`, by default a ValueError: one line in the job's log, not a traceback)."""
    try:
        action()
    except errors as error:
        print(f"{step}: {error}", file=sys.stderr)
        return 1
    return 0
