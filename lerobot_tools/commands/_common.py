"""Shared CLI plumbing: output format and jobs options, one-line fatal errors (exit 2)."""

from __future__ import annotations

import sys
from typing import NoReturn

import click

format_option = click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
                             show_default=True, help="text for people, json (one document on stdout) for machines.")
jobs_option = click.option("--jobs", "-j", type=click.IntRange(min=0), default=1, show_default=True,
                           help="Worker processes (0 = one per CPU).")


def fail(message: str, status: int = 2) -> NoReturn:
    """Print ``lrtool: error: <message>`` on stderr (one line, no traceback) and exit with ``status``."""
    click.echo(f"lrtool: error: {message}", err=True)
    sys.exit(status)
