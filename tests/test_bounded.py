"""Bounded resources: every parsed file is a regular file under a size cap, JSON nesting is bounded, and no
hostile file makes lrtool hang, allocate gigabytes or print a traceback.

The commands run in a subprocess with a timeout (a FIFO used to hang the read forever) and an address-space
limit (a ``$ref`` to ``/dev/zero`` used to read until memory ran out).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from lerobot_tools.cli import cli
from lerobot_tools.dataset import mixture
from lerobot_tools.dataset.model import Dataset, read_json
from lerobot_tools.errors import DatasetError, LrtoolError, UsageError

REPO = Path(__file__).resolve().parent.parent
CLEAN = REPO / "fixtures" / "datasets" / "clean_v21"
CLEAN_V30 = REPO / "fixtures" / "datasets" / "clean_v30"
DEEP = "[" * 5000 + "]" * 5000
MAX_JSON_BYTES = 64 * 2**20  # the documented cap for JSON metadata files


def lrtool(*args: str, timeout: float = 60, mem_mb: int = 2048) -> subprocess.CompletedProcess:
    """Run ``python -m lerobot_tools`` from this tree with a wall-clock timeout and an address-space cap."""
    def limit() -> None:  # pragma: no cover (runs in the child)
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (mem_mb * 2**20, mem_mb * 2**20))

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "lerobot_tools", *args], capture_output=True, text=True,
                          timeout=timeout, env=env, preexec_fn=limit, cwd=REPO)


def one_line_error(res: subprocess.CompletedProcess | object) -> None:
    """No traceback, no internal error: only lrtool's own one-line errors (CliRunner results: no exception
    escaped the command)."""
    exc = getattr(res, "exception", None)
    assert exc is None or isinstance(exc, SystemExit), repr(exc)
    out = getattr(res, "stderr", "") + getattr(res, "stdout", getattr(res, "output", ""))
    assert "Traceback" not in out and "RecursionError" not in out and "please report" not in out, out


@pytest.fixture
def alarm():
    """Fail (instead of hanging forever) when an in-process read blocks for 30 s."""
    import signal

    def ring(signum, frame):
        raise TimeoutError("blocked for 30 s: the read hung")

    old = signal.signal(signal.SIGALRM, ring)
    signal.alarm(30)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


@pytest.fixture
def ds(tmp_path):
    root = tmp_path / "ds"
    shutil.copytree(CLEAN, root)
    return root


# ---------------------------------------------------------------------- the helper itself
def test_read_capped_refuses_devices_fifos_folders_and_big_files(tmp_path, alarm):
    from lerobot_tools._io import load_json_file, read_capped

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    link = tmp_path / "zero.json"
    os.symlink("/dev/zero", link)
    big = tmp_path / "big.json"
    with open(big, "wb") as fh:
        fh.truncate(MAX_JSON_BYTES + 1)  # sparse: costs no disk
    for path, words in ((fifo, "FIFO"), (link, "device"), (tmp_path, "folder"), (big, "64 MiB")):
        with pytest.raises(LrtoolError) as exc:
            read_capped(path)
        assert words in str(exc.value) and str(path) in str(exc.value)
    (tmp_path / "ok.json").write_text('{"a": 1}')
    assert load_json_file(tmp_path / "ok.json") == {"a": 1}


def test_deep_json_is_one_error_naming_the_file():
    from lerobot_tools._io import MAX_JSON_DEPTH, loads_json

    for text in (DEEP, "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1),
                 '{"a":' * 3000 + "1" + "}" * 3000):
        with pytest.raises(DatasetError, match="nested too deeply") as exc:
            loads_json(text, "meta/info.json", error=DatasetError)
        assert str(exc.value).startswith("meta/info.json:")
    assert loads_json("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH) is not None


# ---------------------------------------------------------------------- dataset metadata
def test_info_json_fifo_does_not_hang_validate(ds):
    (ds / "meta" / "info.json").unlink()
    os.mkfifo(ds / "meta" / "info.json")
    res = lrtool("validate", str(ds), timeout=60)
    assert res.returncode == 1, res.stderr
    assert "I002" in res.stdout and "FIFO" in res.stdout
    one_line_error(res)


def test_info_json_symlink_to_dev_zero_is_refused_not_read(ds):
    (ds / "meta" / "info.json").unlink()
    os.symlink("/dev/zero", ds / "meta" / "info.json")
    res = lrtool("validate", str(ds), timeout=60, mem_mb=1024)
    assert res.returncode == 1, res.stderr
    assert "I002" in res.stdout and "device" in res.stdout
    one_line_error(res)


def test_oversized_info_json_is_refused_naming_the_cap(ds):
    with open(ds / "meta" / "info.json", "r+b") as fh:
        fh.truncate(MAX_JSON_BYTES + 10)
    with pytest.raises(DatasetError, match="over the 64 MiB limit"):
        Dataset(ds)


def test_episodes_jsonl_fifo_does_not_hang(ds):
    (ds / "meta" / "episodes.jsonl").unlink()
    os.mkfifo(ds / "meta" / "episodes.jsonl")
    res = lrtool("validate", str(ds), timeout=60)
    assert res.returncode == 1, res.stderr
    assert "FIFO" in res.stdout
    one_line_error(res)


@pytest.mark.parametrize("rel", ["meta/info.json", "meta/stats.json", "meta/episodes.jsonl", "meta/tasks.jsonl"])
def test_deeply_nested_metadata_is_a_finding_not_a_crash(ds, rel):
    path = ds / rel
    if rel == "meta/info.json":
        path.write_text(DEEP)
    elif rel == "meta/stats.json":
        stats = json.loads(path.read_text())
        stats["action"]["mean"] = json.loads("[" * 900 + "1" + "]" * 900)  # parses, too deep to process
        path.write_text(json.dumps(stats))
    else:
        path.write_text(path.read_text() + DEEP + "\n")
    res = CliRunner().invoke(cli, ["validate", str(ds), "--deep", "--format", "json"])
    one_line_error(res)
    # every one is an error: lerobot parses a stats.json that exists (load_stats) and numpy refuses 900 levels
    assert res.exit_code == 1, res.output
    doc = json.loads(res.output)
    msgs = [f["message"] for f in doc["datasets"][0]["findings"]]
    assert any("nested too deeply" in m for m in msgs), msgs


def test_diagnose_decode_deep_info_json_is_one_line_exit_1(ds):
    (ds / "meta" / "info.json").write_text(DEEP)
    res = CliRunner().invoke(cli, ["diagnose-decode", str(ds), "--frames", "0"])
    one_line_error(res)
    assert res.exit_code == 1 and "nested too deeply" in res.output


# ---------------------------------------------------------------------- mixtures
def test_mixture_ref_to_dev_zero_is_refused(tmp_path):
    os.symlink("/dev/zero", tmp_path / "zero.json")
    (tmp_path / "m.json").write_text(json.dumps({"datasets": [{"$ref": "zero.json"}]}))
    res = lrtool("validate", str(tmp_path / "m.json"), timeout=60, mem_mb=1024)
    assert res.returncode == 2, res.stderr
    assert "zero.json" in res.stderr and ("device" in res.stderr or "outside" in res.stderr)
    one_line_error(res)


def test_mixture_ref_to_fifo_does_not_hang(tmp_path):
    os.mkfifo(tmp_path / "pipe.json")
    (tmp_path / "m.json").write_text(json.dumps({"datasets": [{"$ref": "pipe.json"}]}))
    res = lrtool("validate", str(tmp_path / "m.json"), timeout=60)
    assert res.returncode == 2 and "FIFO" in res.stderr
    one_line_error(res)


def test_mixture_file_itself_must_be_regular_and_capped(tmp_path, alarm):
    os.mkfifo(tmp_path / "m.txt")
    with pytest.raises(UsageError, match="FIFO"):
        mixture.read_mixture(tmp_path / "m.txt")
    big = tmp_path / "big.txt"
    with open(big, "wb") as fh:
        fh.truncate(MAX_JSON_BYTES + 1)
    with pytest.raises(UsageError, match="64 MiB"):
        mixture.read_mixture(big)


@pytest.mark.parametrize("doc", [DEEP, '{"datasets": ' + DEEP + "}"])
def test_deep_mixture_json_is_usage_error(tmp_path, doc):
    f = tmp_path / "m.json"
    f.write_text(doc)
    res = CliRunner().invoke(cli, ["validate", str(f)])
    assert res.exit_code == 2 and "nested too deeply" in res.output
    one_line_error(res)


def test_deep_nesting_spread_over_ref_includes_is_refused(tmp_path):
    # each file is shallow enough on its own; inlined, they nest past the limit
    n = 12
    for i in range(n):
        inner = {"$ref": f"p{i + 1}.json"} if i + 1 < n else {"root": "x"}
        (tmp_path / f"p{i}.json").write_text(json.dumps(json.loads("[" * 60 + json.dumps(inner) + "]" * 60)))
    (tmp_path / "m.json").write_text(json.dumps({"datasets": [{"$ref": "p0.json"}]}))
    with pytest.raises(UsageError, match="nested too deeply"):
        mixture.read_mixture(tmp_path / "m.json")


def test_read_json_refuses_fifo_quickly(tmp_path, alarm):
    os.mkfifo(tmp_path / "info.json")
    with pytest.raises(DatasetError, match="FIFO"):
        read_json(tmp_path / "info.json", "meta/info.json")


# ---------------------------------------------------------------------- non-finite and absurd numbers
@pytest.mark.parametrize("layout", [CLEAN, CLEAN_V30], ids=["v21", "v30"])
@pytest.mark.parametrize("fps", ["NaN", "Infinity", "-Infinity", "1e308", "1e400", "1" + "0" * 400])
def test_absurd_fps_is_a_finding_in_every_command(tmp_path, layout, fps):
    root = tmp_path / "ds"
    shutil.copytree(layout, root)
    info = json.loads((root / "meta" / "info.json").read_text())
    info["fps"] = "FPS"
    (root / "meta" / "info.json").write_text(json.dumps(info).replace('"FPS"', fps))
    res = CliRunner().invoke(cli, ["validate", str(root), "--deep", "--format", "json"])
    one_line_error(res)
    assert res.exit_code == 1, res.output
    found = {f["check"]: f for f in json.loads(res.output)["datasets"][0]["findings"]}
    assert found["I005"]["severity"] == "error" and "M001" not in found, found
    for argv in (["reshard", "--dry-run"], ["repair", "--dry-run"], ["diagnose-decode", "--frames", "0"]):
        res = CliRunner().invoke(cli, [*argv, str(root)])
        one_line_error(res)
        assert res.exit_code in (0, 1, 2), (argv, res.output)


@pytest.mark.parametrize("argv", [
    ["validate", "{ds}", "--tolerance-s"], ["validate", "{ds}", "--row-group-mb"], ["reshard", "{ds}", "--row-group-mb"],
    ["diagnose-decode", "{ds}", "--target-fps"], ["smoke", "{ds}", "--tolerance-s"],
    ["prefetch", "{mix}", "--max-wait-s"], ["repair", "{ds}", "--lock-timeout"],
])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1"])
def test_non_finite_or_negative_option_is_a_usage_error(tmp_path, argv, value):
    mix = tmp_path / "m.txt"
    mix.write_text("org/ds\n")
    args = [a.format(ds=CLEAN, mix=mix) for a in argv] + [value]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 2, (args, res.output)
    assert "Traceback" not in res.output and argv[-1] in res.output


def test_library_refuses_a_nan_tolerance_instead_of_disabling_d003():
    from lerobot_tools.checks.context import ValidateOptions
    from lerobot_tools.validate import validate

    with pytest.raises(UsageError, match="tolerance-s"):
        validate([str(CLEAN)], ValidateOptions(deep=True, tolerance_s=float("nan")))


# ---------------------------------------------------------------------- path templates
@pytest.mark.parametrize("template", [
    "data/chunk-{episode_chunk:03d}/episode_{episode_index:>2000000000}.parquet",
    "data/chunk-{episode_chunk:03d}/episode_{episode_index:.999999999f}.parquet",
    "data/{episode_index.__class__.__init__.__globals__}/x.parquet",
    "data/{episode_index[0]}/{episode_chunk}.parquet",
    "data/{episode_index!r}/{episode_chunk}.parquet",
    "data/{episode_index:{episode_chunk}}/x.parquet",
    "data/{}/{episode_index}.parquet",
])
def test_hostile_path_template_is_refused_before_formatting(tmp_path, template):
    root = tmp_path / "ds"
    shutil.copytree(CLEAN, root)
    info = json.loads((root / "meta" / "info.json").read_text())
    info["data_path"] = template
    (root / "meta" / "info.json").write_text(json.dumps(info))
    res = lrtool("validate", str(root), "--format", "json", timeout=120, mem_mb=1024)
    assert res.returncode == 1, res.stderr
    found = json.loads(res.stdout)["datasets"][0]["findings"]
    assert any(f["check"] == "I008" and "data_path" in f["message"] for f in found), found
    assert not any(f["check"] == "M001" for f in found), found
    one_line_error(res)
    for argv in (["reshard", "--dry-run"], ["repair", "--dry-run"]):
        res = lrtool(*argv, str(root), timeout=120, mem_mb=1024)
        assert res.returncode in (1, 2), (argv, res.stdout, res.stderr)
        one_line_error(res)


def test_template_rules():
    from lerobot_tools.dataset.templates import V2_DATA_PATH, V2_VIDEO_PATH, V3_DATA_PATH, V3_VIDEO_PATH, template_error

    for ok in (V2_DATA_PATH, V2_VIDEO_PATH, V3_DATA_PATH, V3_VIDEO_PATH, "data/{episode_index:>8}.parquet"):
        assert template_error(ok) is None, ok
    for bad in ("{episode_index:>33}", "{episode_index:.40f}", "{video_key[0]}", "{video_key.upper}", "{video_key!s}",
                "{0}", "{}", "{episode_index:{file_index}}", "{nope}", "{", "x" * 5000):
        assert template_error(bad) is not None, bad
