"""``lrtool diagnose-decode`` as a distributed job.

The tasks run phase 1 (:func:`lerobot_tools.diagnose.probe.probe_target`: every referenced video checked for
presence and integrity, decoder headers read, compared with ``info.json``), the I/O-heavy part; the merge
runs phases 2-5 (:func:`lerobot_tools.diagnose.pipeline.analyze`: environment, NVDEC verdicts, stream groups,
decode tests of K frames per distinct format, advice) once, on the machine that merges: with ``--gpu MODEL``
the verdicts are those of that model wherever the merge runs; without it, they are for the GPU visible to
the merging process. A dataset split by file is probed by the tasks that own its files, each recording the
header probes of its files; the merge replays them through the same phase-1 code, so the result is the one
a single process gives (a probe asked with other arguments, e.g. when a file another task owns turned out
missing and the next file gets the header read instead, is read again).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import IO, Any

from lerobot_tools.distributed.partition import DatasetSize
from lerobot_tools.distributed.plan import sizes_by_file, target_from_dict, target_to_dict


def make_spec(targets: list, options) -> dict[str, Any]:
    """The plan spec of a diagnose-decode run: resolved targets (identical entries merged, as
    :func:`lerobot_tools.diagnose.pipeline.diagnose` merges them) and :class:`~lerobot_tools.diagnose.DiagnoseOptions`."""
    from lerobot_tools.dataset.targets import merge_identical

    return {"targets": [target_to_dict(t) for t in merge_identical(list(targets))], "options": asdict(options)}


def _options(spec: dict):
    from lerobot_tools.diagnose.model import DiagnoseOptions

    return DiagnoseOptions(**spec["options"])


def dataset_from_dict(d: dict):
    """A phase-1 :class:`~lerobot_tools.diagnose.model.DatasetDiagnosis` from ``dataclasses.asdict``: typed
    nested results rebuilt from the field types, plus the untyped ones (each stream's
    :class:`~lerobot_tools.video.probe.VideoProbe`, the :class:`~lerobot_tools.findings.RootCause` list)."""
    from lerobot_tools.diagnose.model import DatasetDiagnosis
    from lerobot_tools.distributed.jobs import dataclass_from_dict
    from lerobot_tools.findings import RootCause
    from lerobot_tools.video.probe import VideoProbe

    dd = dataclass_from_dict(DatasetDiagnosis, d)
    for sp in dd.streams:
        if isinstance(sp.probe, dict):
            sp.probe = dataclass_from_dict(VideoProbe, sp.probe)
    dd.causes = [dataclass_from_dict(RootCause, c) if isinstance(c, dict) else c for c in dd.causes]
    dd.groups = []
    return dd


def _key(rel: str, pyav: bool, gop: str) -> str:
    return json.dumps([rel, bool(pyav), gop])


class _Recorder:
    def __init__(self, owned: list[str]):
        self.owned = set(owned)
        self.memo: dict[str, Any] = {}

    def __call__(self, rel, path, *, pyav, gop, sniffed=None):
        from lerobot_tools.video.probe import VideoProbe, probe_video

        if rel not in self.owned:
            return VideoProbe(path=str(path))
        pr = probe_video(path, pyav=pyav, gop=gop, sniffed=sniffed)
        self.memo[_key(rel, pyav, gop)] = pr.to_dict()
        return pr


class _Replayer:
    def __init__(self, memo: dict[str, Any]):
        self.memo = memo
        self.misses = 0

    def __call__(self, rel, path, *, pyav, gop, sniffed=None):
        from lerobot_tools.video.probe import VideoProbe, probe_video

        hit = self.memo.get(_key(rel, pyav, gop))
        if hit is None:
            self.misses += 1
            return probe_video(path, pyav=pyav, gop=gop, sniffed=sniffed)
        return VideoProbe(**hit)


def _probe(target, all_files: bool, probe_file=None):
    """:func:`probe_target` with an internal error reported as the single-process run reports it."""
    from lerobot_tools.diagnose.model import ERROR, DatasetDiagnosis, Problem
    from lerobot_tools.diagnose.probe import probe_target

    try:
        return probe_target(target, all_files, probe_file=probe_file)
    except Exception as exc:  # same wording as diagnose.probe._probe_one
        dd = DatasetDiagnosis(target=target.spec, source=target.source, root=str(target.root) if target.root else None)
        dd.error = f"lrtool failed on this dataset ({type(exc).__name__}: {exc}); please report it"
        dd.problems.append(Problem(ERROR, "target", dd.error))
        return dd


class DiagnoseJob:
    """See the module docstring."""

    command = "diagnose-decode"

    def sizes(self, spec: dict) -> list[DatasetSize]:
        return sizes_by_file([target_from_dict(raw) for raw in spec["targets"]],
                             lambda ds: [vf.relpath for vf in ds.video_files()])

    def run_dataset(self, spec: dict, index: int) -> dict:
        return asdict(_probe(target_from_dict(spec["targets"][index]), _options(spec).all_files))

    def run_head(self, spec: dict, index: int) -> None:
        return None  # phase 1 of a split dataset is replayed at the merge

    def run_files(self, spec: dict, index: int, relpaths: list[str]) -> dict:
        rec = _Recorder(relpaths)
        _probe(target_from_dict(spec["targets"][index]), _options(spec).all_files, rec)
        return {"memo": rec.memo}

    def merge(self, spec: dict, datasets: list) -> Any:
        from lerobot_tools.diagnose.pipeline import analyze

        options = _options(spec)
        probed = []
        for d in datasets:
            if not d.split:
                probed.append(dataset_from_dict(d.whole))
                continue
            memo: dict[str, Any] = {}
            for _, result in d.files:
                memo.update(result.get("memo") or {})
            probed.append(_probe(target_from_dict(spec["targets"][d.index]), options.all_files, _Replayer(memo)))
        return analyze(probed, options)

    def report(self, result: Any, render: dict, out: IO[str]) -> int:
        from lerobot_tools.diagnose import render_json, render_text

        import sys

        if render.get("format") == "json":
            render_json(result, out)
        else:
            render_text(result, out, color=bool(render.get("color")) and out.isatty())
        if result.device_problem:
            print(f"lrtool: error: {result.device_problem}", file=sys.stderr)
        return result.exit_status


JOB = DiagnoseJob()
