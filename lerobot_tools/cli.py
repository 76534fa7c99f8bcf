"""The ``lrtool`` command line: a click group whose subcommands load lazily.

Each subcommand lives in its own module and is imported only when invoked, so ``lrtool --help`` and
``lrtool validate`` never import torch, torchcodec or datasets. Commands only parse options and call
library functions and end through :func:`lerobot_tools.commands._common.finish`, with the statuses of
:mod:`lerobot_tools.exitcodes`: 0 = no errors, 1 = errors found (or an action failed), 2 = the tool could not
run, 130 = interrupted (Ctrl-C), 143 = terminated (SIGTERM); a signal is handled the same way for every command
(:mod:`lerobot_tools._signals`).
"""

from __future__ import annotations

import importlib
import sys

import click

from lerobot_tools import __version__, exitcodes

# name -> (module, attribute, one-line help shown by `lrtool --help` without importing the module)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "validate": ("lerobot_tools.commands.validate", "validate", "Check datasets for drift between metadata and files."),
    "checks": ("lerobot_tools.commands.validate", "checks", "List the check catalogue (IDs, severities, docs)."),
    "reshard": ("lerobot_tools.commands.reshard", "reshard",
                "Rewrite parquet into episode-aligned, page-indexed groups."),
    "diagnose-decode": ("lerobot_tools.commands.diagnose_decode", "diagnose_decode",
                        "Say whether each video decodes on NVDEC or needs the CPU."),
    "prefetch": ("lerobot_tools.commands.prefetch", "prefetch",
                 "Download a mixture's datasets within the Hub's rate limits."),
    "repair": ("lerobot_tools.commands.repair", "repair", "Fix what validate finds: diff first, backup, --undo."),
    "smoke": ("lerobot_tools.commands.smoke", "smoke", "Run the bundled loaders over the data as a smoke test."),
    "report": ("lerobot_tools.commands.report", "report", "Print the merged report of a scale-out run."),
    "reencode": ("lerobot_tools.commands.reencode", "reencode",
                 "Re-encode videos (e.g. AV1 to H.264), with --undo."),
    "help": ("lerobot_tools.commands.help", "help_", "Show a command's help, or a topic: `lrtool help scale-out`."),
}


class LazyGroup(click.Group):
    """A click group that imports a subcommand's module only when that subcommand runs."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module_name, attr, _ = COMMANDS[name]
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:  # a command not built yet, or a missing optional dependency
            if exc.name == module_name:
                return None
            raise
        return getattr(module, attr)

    def invoke(self, ctx: click.Context):
        """Run the subcommand; Ctrl-C and SIGTERM end it with one line and exit 130 / 143. Everything it prints
        goes through :mod:`lerobot_tools._safeout` (no raw control character from data reaches the terminal)."""
        from lerobot_tools._safeout import safe_std_streams
        from lerobot_tools._signals import exit_status_for, sigterm_raises

        with safe_std_streams():
            return self._invoke_safely(ctx, exit_status_for, sigterm_raises)

    def _invoke_safely(self, ctx: click.Context, exit_status_for, sigterm_raises):
        from lerobot_tools._signals import check_interrupted

        try:
            with sigterm_raises():
                try:
                    result = super().invoke(ctx)
                except SystemExit:  # commands end with sys.exit(status): the check below must run then too
                    check_interrupted()
                    raise
                check_interrupted()  # a signal whose exception a finaliser dropped still ends the run as interrupted
            return result
        except KeyboardInterrupt as exc:  # also _signals.Terminated: every cleanup has run on the way here
            status = exit_status_for(exc)
            cmd = self.get_command(ctx, ctx.invoked_subcommand or "") if ctx.invoked_subcommand else None
            note = getattr(cmd, "interrupt_note", None)
            what = "terminated (SIGTERM)" if status == exitcodes.TERMINATED else "interrupted"
            click.echo(f"lrtool: {what}" + (f": {note}" if note else ""), err=True)
            sys.exit(status)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, help_) for name, (_, _, help_) in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="lrtool")
def cli() -> None:
    """lrtool keeps LeRobot datasets, and mixtures of hundreds of them, healthy before training.

    Offline: targets are dataset folders, repo ids found in the local caches, or mixture files.
    Exit status: 0 no errors, 1 errors found, 2 the tool could not run, 130 interrupted (Ctrl-C),
    143 terminated (SIGTERM).
    """


def main(argv: list[str] | None = None) -> None:
    """Console entry point (``lrtool``)."""
    cli.main(args=argv, prog_name="lrtool")


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1:])
