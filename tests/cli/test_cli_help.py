"""`--help` fits a screen: every command's help is at most 40 lines at 80 columns, shows its own options first, and
the scale-out options (--shard, --executor and friends) are one group, listed once by `lrtool help scale-out`,
still accepted, with the same defaults and the same one-line errors, by every command that had them."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from lerobot_tools.cli import COMMANDS, cli
from lerobot_tools.commands._distributed import SCALE_OUT_NOTE, scale_out_params

MAX_LINES = 40
#: the commands that took the scale-out options before they became one group
SCALE_OUT_COMMANDS = ["validate", "reshard", "diagnose-decode", "reencode", "prefetch", "repair"]
#: a positional argument each command parses (parsing only checks the option values, nothing is read)
POSITIONAL = {"prefetch": ["mixture.txt"]}
SCALE_OUT_NAMES = [opt for p in scale_out_params() for opt in p.opts]


def run(*args: str):
    result = CliRunner().invoke(cli, list(args), env={"COLUMNS": "80"}, prog_name="lrtool")
    return result.exit_code, result.output


def command(name: str) -> click.Command:
    ctx = click.Context(cli, info_name="lrtool")
    cmd = cli.get_command(ctx, name)
    assert cmd is not None, name
    return cmd


def parse(name: str, *args: str) -> dict:
    """The parameters ``lrtool NAME ARGS`` parses to (the command does not run)."""
    parent = cli.make_context("lrtool", [name])
    with command(name).make_context(name, [*POSITIONAL.get(name, ["ds"]), *args], parent=parent) as ctx:
        return dict(ctx.params)


def test_the_commands_under_test_are_every_command():
    assert sorted(COMMANDS) == sorted(["validate", "checks", "reshard", "diagnose-decode", "prefetch", "repair",
                                       "smoke", "report", "reencode", "help"])
    having = [n for n in COMMANDS if any(p.name == "shard" for p in command(n).params)]
    assert sorted(having) == sorted(SCALE_OUT_COMMANDS)


@pytest.mark.parametrize("args", [[]] + [[name] for name in COMMANDS], ids=lambda a: a[0] if a else "lrtool")
def test_help_fits_40_lines_at_80_columns(args):
    code, out = run(*args, "--help")
    assert code == 0, out
    lines = out.rstrip("\n").split("\n")
    assert len(lines) <= MAX_LINES, f"{' '.join(args)} --help is {len(lines)} lines:\n{out}"
    assert max(map(len, lines)) <= 80


def test_validate_help_fits_40_lines_through_the_entry_point():
    """What a user counts: `lrtool validate --help | wc -l` (not a terminal, COLUMNS=80)."""
    env = {**os.environ, "COLUMNS": "80"}
    out = subprocess.run([sys.executable, "-m", "lerobot_tools", "validate", "--help"], capture_output=True, text=True,
                         env=env, check=True).stdout
    assert 20 <= out.count("\n") <= MAX_LINES, out


def _rows(out: str, opt: click.Option, ctx: click.Context) -> list[int]:
    """Where the help rows of ``opt`` begin in ``out`` (its first column at the start of an indented line)."""
    first = opt.get_help_record(ctx)[0]
    return [m.start() for m in re.finditer(r"^  " + re.escape(first) + r"(  |\n)", out, re.M)]


def _mentions(name: str, text: str) -> int:
    """How often option ``name`` is named in ``text`` (not as a part of a longer name such as --max-workers)."""
    return len(re.findall(r"(?<![\w-])" + re.escape(name) + r"(?![\w-])", text))


@pytest.mark.parametrize("name", SCALE_OUT_COMMANDS)
def test_own_options_first_then_one_line_on_scale_out(name):
    code, out = run(name, "--help")
    assert code == 0
    cmd = command(name)
    ctx = click.Context(cmd, info_name=name)
    own = [p for p in cmd.params if isinstance(p, click.Option) and p.name not in {q.name for q in scale_out_params()}]
    assert len(own) >= 5
    assert all(len(_rows(out, p, ctx)) == 1 for p in own), out
    last_own = max(_rows(out, p, ctx)[0] for p in own)
    mentions = [m.start() for m in re.finditer(
        "|".join(re.escape(n) for n in SCALE_OUT_NAMES) + r"|scale-out|Scale-out", out)]
    assert mentions and min(mentions) > last_own, out
    lines = [line for line in out.split("\n") if re.search(r"--shard|--executor|--slurm|--ray|scale-out", line)]
    assert lines == ["  " + SCALE_OUT_NOTE], lines  # one line, pointing to where they are described
    for opt in SCALE_OUT_NAMES:  # --shard and --executor are named by the note; none other appears
        assert _mentions(opt, out) == (opt in ("--shard", "--executor")), opt


@pytest.mark.parametrize("name", ["checks", "smoke", "report"])
def test_commands_without_scale_out_do_not_mention_it(name):
    out = run(name, "--help")[1]
    assert SCALE_OUT_NOTE not in out and "--executor" not in out.replace("(--shard / --executor)", "")


def test_scale_out_group_is_listed_in_full_once():
    code, topic = run("help", "scale-out")
    assert code == 0
    flat = " ".join(topic.split())
    params = scale_out_params(hidden=False)
    assert len(params) == 15
    ctx = click.Context(click.Command("scale-out"))
    for p in params:
        assert len(_rows(topic, p, ctx)) == 1, p.opts
        assert p.help and " ".join(p.help.split()) in flat, p.opts
    # what one share of each command's work is, for exactly the commands that take the options
    section = topic.split("Commands (one share of the work):\n", 1)[1].split("\n\n", 1)[0]
    assert sorted(re.findall(r"^  (\S+)  ", section, re.M)) == sorted(SCALE_OUT_COMMANDS)
    # listed once: no other help page of lrtool has a row for any of them
    pages = [run(*args, "--help")[1] for args in [[]] + [[n] for n in COMMANDS]]
    everything = "\n".join(pages + [topic])
    for p in params:
        assert len(_rows(everything, p, ctx)) == 1, p.opts


def test_help_command_shows_the_same_pages():
    assert run("help") == run("--help")
    assert run("help", "validate") == run("validate", "--help")
    assert run("help", "report")[1].startswith("Usage: lrtool report [OPTIONS] [merge] PATH...")
    code, out = run("help", "nosuch")
    assert code == 2
    assert out.startswith("lrtool: error: no command or help topic 'nosuch' (commands: validate, ") and \
        out.endswith("; topics: scale-out)\n") and out.count("\n") == 1


# ----------------------------------------------------------------- the options themselves: unchanged

GIVEN = ["--shard", "1/4", "--part-out", "p.json", "--executor", "slurm", "--tasks", "3", "--workers", "2",
         "--logging-dir", "run", "--slurm-partition", "cpu", "--slurm-time", "1:00:00", "--slurm-cpus-per-task", "3",
         "--slurm-mem-per-cpu-gb", "5", "--slurm-qos", "high", "--slurm-sbatch-arg", "account=robots",
         "--slurm-sbatch-arg", "--constraint=cpu", "--slurm-venv-path", "venv/bin/activate", "--slurm-env-command",
         "module load x", "--ray-address", "ray://head:10001"]


@pytest.mark.parametrize("name", SCALE_OUT_COMMANDS)
def test_every_scale_out_option_is_still_accepted(name):
    from pathlib import Path

    got = parse(name, *GIVEN)
    assert {k: got[k] for k in [p.name for p in scale_out_params()]} == {
        "shard": (1, 4), "part_out": Path("p.json"), "executor": "slurm", "tasks": 3, "workers": 2,
        "logging_dir": Path("run"), "slurm_partition": "cpu", "slurm_time": "1:00:00", "slurm_cpus_per_task": 3,
        "slurm_mem_per_cpu_gb": 5, "slurm_qos": "high", "slurm_sbatch_args": {"account": "robots", "constraint": "cpu"},
        "slurm_venv_path": "venv/bin/activate", "slurm_env_command": "module load x", "ray_address": "ray://head:10001"}
    defaults = parse(name)
    assert {k: defaults[k] for k in got if k in {p.name for p in scale_out_params()}} == {
        "shard": None, "part_out": None, "executor": None, "tasks": None, "workers": -1, "logging_dir": None,
        "slurm_partition": None, "slurm_time": "24:00:00", "slurm_cpus_per_task": 1, "slurm_mem_per_cpu_gb": 2,
        "slurm_qos": None, "slurm_sbatch_args": {}, "slurm_venv_path": None, "slurm_env_command": None,
        "ray_address": None}


BAD = [
    (["--tasks", "0"], "Error: Invalid value for '--tasks': 0 is not in the range 1<=x<=100000."),
    (["--workers", "-2"], "Error: Invalid value for '--workers': -2 is not in the range -1<=x<=100000."),
    (["--executor", "nope"], "Error: Invalid value for '--executor': 'nope' is not one of 'local', 'slurm', 'ray'."),
    (["--shard", "a/b", "--part-out", "p.json"], "Error: Invalid value for '--shard': expected RANK/WORLD, e.g. 3/8"),
    (["--slurm-cpus-per-task", "0"], "Error: Invalid value for '--slurm-cpus-per-task': 0 is not in the range x>=1."),
    (["--shard", "1/3"], "lrtool: error: --shard needs --part-out FILE"),
    (["--part-out", "p.json"], "lrtool: error: --part-out needs --shard or --executor"),
    (["--executor", "local", "--tasks", "2"],
     "lrtool: error: --executor needs --logging-dir DIR (plan, parts, logs; re-run with it to resume)"),
    (["--executor", "slurm", "--tasks", "2", "--logging-dir", "d"],
     "lrtool: error: --executor slurm needs --slurm-partition"),
    (["--executor", "local", "--tasks", "2", "--logging-dir", "d", "--ray-address", "a"],
     "lrtool: error: --ray-address applies to --executor ray"),
    (["--shard", "0/2", "--part-out", "p", "--slurm-qos", "q"],
     "lrtool: error: --slurm-qos applies to --executor, not --shard"),
]


@pytest.mark.parametrize("name", SCALE_OUT_COMMANDS)
def test_scale_out_errors_are_unchanged(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # nothing may be written; the checks refuse before any work
    for args, error in BAD:
        code, out = run(name, *POSITIONAL.get(name, ["ds"]), *args)
        assert code == 2 and out.rstrip("\n").split("\n")[-1] == error, (args, out)
    assert list(tmp_path.iterdir()) == []


def test_help_topic_does_not_import_heavy_modules():
    probe = ("import sys\nfrom lerobot_tools.cli import main\n"
             "for args in (['help', 'scale-out'], ['help', 'validate'], ['--help']):\n"
             "    try:\n        main(args)\n    except SystemExit:\n        pass\n"
             "heavy = ('torch', 'torchcodec', 'datasets', 'datatrove', 'ray')\n"
             "print('HEAVY', [m for m in heavy if m in sys.modules])\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert "Scale-out options:" in out and out.strip().endswith("HEAVY []"), out[-500:]
