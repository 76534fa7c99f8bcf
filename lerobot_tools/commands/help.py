"""``lrtool help``: lrtool's help, a command's help, or a help topic.

The one topic is ``scale-out``: the ``--shard`` / ``--executor`` options that several commands share are hidden
from each command's ``--help`` (:mod:`lerobot_tools.commands._distributed`) and listed here, once, with their help
texts and what one share of each command's work holds.
"""

from __future__ import annotations

import click

from lerobot_tools.commands._common import fail

#: the help topics (``lrtool help TOPIC``)
TOPICS = ("scale-out",)


@click.command("help")
@click.argument("topic", required=False, metavar="[COMMAND|TOPIC]")
@click.pass_context
def help_(ctx: click.Context, topic: str | None) -> None:
    """Show lrtool's help, a command's help (as COMMAND --help does), or a topic.

    \b
    Topics:
      scale-out  the --shard/--executor options several commands share,
                 listed once with their help texts.
    """
    group_ctx = ctx.parent if ctx.parent is not None else ctx
    group = group_ctx.command
    if topic is None:
        click.echo(group_ctx.get_help())
    elif topic == "scale-out":
        click.echo(scale_out_help(group_ctx))
    else:
        cmd = group.get_command(group_ctx, topic) if isinstance(group, click.Group) else None
        if cmd is None:
            names = group.list_commands(group_ctx) if isinstance(group, click.Group) else []
            fail(f"no command or help topic {topic!r} (commands: {', '.join(names)}; topics: {', '.join(TOPICS)})")
        with click.Context(cmd, info_name=topic, parent=group_ctx) as sub:
            click.echo(cmd.get_help(sub))


def scale_out_help(group_ctx: click.Context) -> str:
    """The text of ``lrtool help scale-out``: what the options do, which commands take them and what one share of
    each command's work is (``scale_out_unit`` of each command that has them), then every option with its help."""
    from lerobot_tools.commands._distributed import SCALE_OUT_HELP, scale_out_params

    group = group_ctx.command
    units = []
    if isinstance(group, click.Group):
        for name in group.list_commands(group_ctx):
            unit = getattr(group.get_command(group_ctx, name), "scale_out_unit", None)
            if unit:
                units.append((name, unit))
    topic = click.Command("scale-out", params=scale_out_params(hidden=False), help=SCALE_OUT_HELP,
                          add_help_option=False)
    ctx = click.Context(topic, info_name="scale-out", parent=group_ctx)
    formatter = ctx.make_formatter()
    formatter.write_usage(group_ctx.command_path, "COMMAND [OPTIONS] ARGS... [SCALE-OUT OPTIONS]")
    topic.format_help_text(ctx, formatter)
    with formatter.section("Commands (one share of the work)"):
        formatter.write_dl(units)
    with formatter.section("Scale-out options"):
        formatter.write_dl([rec for p in topic.get_params(ctx) if (rec := p.get_help_record(ctx)) is not None])
    return formatter.getvalue().rstrip("\n")
