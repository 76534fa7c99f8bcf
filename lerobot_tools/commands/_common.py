"""Shared CLI plumbing: output format, jobs and lock-timeout options, finite float options, one-line fatal
errors (exit 2)."""

from __future__ import annotations

import math
import sys
from typing import Any, NoReturn

import click


class FiniteFloatRange(click.FloatRange):
    """:class:`click.FloatRange` that also refuses ``nan``, ``inf`` and ``-inf`` (a usage error, exit status 2).

    A NaN compares false with every bound, so a plain ``FloatRange(min=0)`` lets ``--tolerance-s nan`` through
    (and silently disables the check it configures).
    """

    name = "finite float range"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = click.FLOAT.convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return super().convert(number, param, ctx)


format_option = click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
                             show_default=True, help="text for people, json (one document on stdout) for machines.")
jobs_option = click.option("--jobs", "-j", type=click.IntRange(min=0), default=1, show_default=True,
                           help="Worker processes (0 = one per CPU).")
lock_timeout_option = click.option(
    "--lock-timeout", type=FiniteFloatRange(min=0, max=7 * 86400), default=60.0, show_default=True, metavar="SECONDS",
    help="Wait this long for another lrtool run writing the same dataset to finish, then give up on that dataset.")


def fail(message: str, status: int = 2) -> NoReturn:
    """Print ``lrtool: error: <message>`` on stderr (one line, no traceback) and exit with ``status``."""
    click.echo(f"lrtool: error: {message}", err=True)
    sys.exit(status)
