"""Shared CLI plumbing: the options every command has (output format, jobs, lock timeout, finite floats),
one-line fatal errors, and the one command ending.

Every command ends the same way (:func:`finish`): the result (:class:`lerobot_tools.exitcodes.CommandResult`)
is printed as text or as one JSON document on stdout, its error lines go to stderr, and the process exits
with its status. A run stopped by Ctrl-C or SIGTERM ends in :meth:`lerobot_tools.cli.LazyGroup.invoke`
(:mod:`lerobot_tools._signals`).
"""

from __future__ import annotations

import json
import math
import sys
from typing import IO, Any, Callable, NoReturn

import click

from lerobot_tools import exitcodes


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
                             show_default=True, help="json: one document on stdout.")
jobs_option = click.option("--jobs", "-j", type=click.IntRange(min=0), default=1, show_default=True, metavar="N",
                           help="Processes (0: one per CPU).")
lock_timeout_option = click.option(
    "--lock-timeout", type=FiniteFloatRange(min=0, max=7 * 86400), default=60.0, show_default=True, metavar="SECONDS",
    help="Wait for another run writing a dataset, then skip it.")


def fail(message: str, status: int = exitcodes.CANNOT_RUN) -> NoReturn:
    """Print ``lrtool: error: <message>`` on stderr (one line, no traceback) and exit with ``status``."""
    from lerobot_tools._safeout import single_line

    click.echo(f"lrtool: error: {single_line(message)}", err=True)
    sys.exit(status)


def finish(result: Any, fmt: str, *, render: Callable[[Any, IO[str]], None] | None = None) -> NoReturn:
    """Print ``result`` and exit with ``result.exit_status``.

    Args:
        result: a :class:`~lerobot_tools.exitcodes.CommandResult`; its optional ``error_lines()`` are printed
            on stderr as ``lrtool: error: ...`` after the report.
        fmt: ``"json"`` (``result.to_dict()``, indented, on stdout) or ``"text"`` (``result.render_text``,
            coloured when stdout is a terminal).
        render: a text renderer ``render(result, out)`` for a result without ``render_text``.

    Output passes through :class:`lerobot_tools._safeout.SafeStream`: the JSON document is valid UTF-8 JSON
    whatever the file names hold, and text shows control characters from data as escapes.
    """
    from lerobot_tools._safeout import json_mode, single_line, wrap

    out = wrap(sys.stdout)
    if fmt == "json":
        with json_mode(out):
            json.dump(result.to_dict(), out, indent=2, ensure_ascii=False, default=str)
            out.write("\n")
    elif render is not None:
        render(result, out)
    else:
        result.render_text(out, color=out.isatty())
    out.flush()
    for line in getattr(result, "error_lines", lambda: [])():
        click.echo(f"lrtool: error: {single_line(line)}", err=True)
    sys.exit(result.exit_status)


def interrupt_note(note: str) -> Callable[[click.Command], click.Command]:
    """Decorate a command with what a Ctrl-C/SIGTERM leaves behind, printed after ``lrtool: interrupted``."""

    def deco(cmd: click.Command) -> click.Command:
        cmd.interrupt_note = note  # type: ignore[attr-defined]
        return cmd

    return deco
