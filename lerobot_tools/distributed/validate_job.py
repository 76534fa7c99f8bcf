"""``lrtool validate`` as a distributed job.

A dataset that is one work item is validated whole by its task, which returns its report. A dataset split
into file items is validated in two steps, so that the merged report is exactly the single-process one:

1. each task owning some of its files runs the same checks over the whole dataset (metadata, footers,
   file sniffing: cheap) but performs the expensive per-file reads (the ``--deep`` column scan of a data
   file, the header probe of a video) only for the files it owns, and returns those facts keyed by file and
   arguments (:class:`~lerobot_tools.checks.engine.FileObserver`); its findings are discarded;
2. the merge validates the dataset once more with every recorded fact replayed instead of read, so the
   families run exactly as in one process. A data file's scan is recorded for the index offset its task
   computed and for "no offset" (what the family passes after an unreadable earlier file); a fact asked
   with other arguments (a v3.0 dataset whose metadata places a file elsewhere than the rows before it,
   behind an unreadable file) is read from disk again, never guessed.

The merge of a split dataset therefore needs the dataset's metadata and footers (no data pages, no video
headers) at the same path.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import IO, Any

from lerobot_tools.checks.context import ValidateOptions
from lerobot_tools.checks.observer import FileObserver
from lerobot_tools.distributed.jobs import dataclass_from_dict
from lerobot_tools.distributed.partition import DatasetSize
from lerobot_tools.distributed.plan import sizes_by_file, target_from_dict, target_to_dict
from lerobot_tools.findings import DatasetReport


# ---------------------------------------------------------------------- spec
def options_to_dict(o: ValidateOptions) -> dict[str, Any]:
    """:class:`ValidateOptions` as JSON (sets as sorted lists)."""
    d = asdict(o)
    d["select"] = sorted(o.select) if o.select is not None else None
    d["ignore"] = sorted(o.ignore)
    return d


def options_from_dict(d: dict[str, Any]) -> ValidateOptions:
    """Inverse of :func:`options_to_dict`."""
    from lerobot_tools.checks.content.options import ContentOptions

    d = dict(d)
    d["select"] = set(d["select"]) if d.get("select") is not None else None
    d["ignore"] = set(d.get("ignore") or [])
    if isinstance(d.get("content"), dict):
        d["content"] = ContentOptions(**d["content"])
    return ValidateOptions(**d)


def make_spec(targets: list, options: ValidateOptions, groups: list[tuple[str, int]] | None = None) -> dict[str, Any]:
    """The plan spec of a validate run: resolved targets and options, and per TARGET argument
    ``(argument, number of targets it resolved to)`` so the merge can run the cross-dataset checks of
    mixture files (an existing file argument is stored as an absolute path)."""
    import os

    spec: dict[str, Any] = {"targets": [target_to_dict(t) for t in targets], "options": options_to_dict(options)}
    if groups is not None:
        spec["groups"] = [[os.path.abspath(a) if os.path.isfile(a) else a, n] for a, n in groups]
    return spec


# ---------------------------------------------------------------------- reports in JSON
def report_to_dict(r: DatasetReport) -> dict[str, Any]:
    """A :class:`DatasetReport` as JSON, keeping every field (group keys and seconds included); of its curation
    facts, what the merge's mixture-wide checks need (the licence and the duplicate signatures, Q010/L003)."""
    facts, r.curation = r.curation, None
    try:
        d = asdict(r)
    finally:
        r.curation = facts
    for f in d["findings"]:  # JSON has no tuple: the part holds exactly what reading it back gives
        f["episodes"] = list(f["episodes"])
    d["curation"] = None if facts is None else {
        "license": facts.license, "dims": facts.dims,
        "signatures": [[e, s.to_dict()] for e, s in facts.signatures]}
    return d


def report_from_dict(d: dict[str, Any]) -> DatasetReport:
    """Inverse of :func:`report_to_dict` (nested dataclasses rebuilt from the field types)."""
    from lerobot_tools.checks.content.facts import CurationFacts
    from lerobot_tools.checks.content.signature import Signature

    d = dict(d)
    cur = d.pop("curation", None)
    r = dataclass_from_dict(DatasetReport, d)
    if isinstance(cur, dict):
        r.curation = CurationFacts(license=cur.get("license"), dims=cur.get("dims"),
                                   signatures=[(int(e), Signature.from_dict(s)) for e, s in cur.get("signatures", [])])
    return r


# ---------------------------------------------------------------------- record / replay
def _scan_key(rel: str, kw: dict) -> str:
    return json.dumps(["scan", rel, kw.get("fps"), kw.get("tolerance_s"), kw.get("index_offset"),
                       list((kw.get("list_columns") or {}).items())])


def _probe_key(rel: str, pyav: bool) -> str:
    return json.dumps(["probe", rel, bool(pyav)])


class _Replayed(Exception):
    pass


def _reraise(name: str, message: str) -> Exception:
    """An exception whose ``str()`` and class name are those recorded (deep.run reports either)."""
    cls = type(name, (_Replayed,), {}) if name.isidentifier() else _Replayed
    return cls(message)


class Recorder(FileObserver):
    """Reads the scans and probes of ``owned`` files and records them in :attr:`memo`; other files get
    empty stand-ins (the findings of a recording run are discarded)."""

    def __init__(self, owned: list[str]):
        self.owned = set(owned)
        self.memo: dict[str, Any] = {}

    def scan_file(self, rel, path, **kwargs):
        from lerobot_tools.checks.deep import FileScan, scan_to_dict

        if rel not in self.owned:
            return FileScan()
        key = _scan_key(rel, kwargs)
        try:
            scan = super().scan_file(rel, path, **kwargs)
        except Exception as exc:
            self.memo[key] = {"raise": [type(exc).__name__, str(exc)]}
            raise
        self.memo[key] = {"scan": scan_to_dict(scan)}
        if kwargs.get("index_offset") is not None:
            # after an unreadable earlier file (owned by another task) the family passes no offset and the
            # global-index check is skipped: record that variant too, it differs only there
            self.memo[_scan_key(rel, {**kwargs, "index_offset": None})] = {
                "scan": dict(scan_to_dict(scan), bad_index=0, first_bad_index=None)}
        return scan

    def probe_video(self, rel, path, *, pyav, sniffed):
        from lerobot_tools.video.probe import VideoProbe

        if rel not in self.owned:
            return VideoProbe(path=str(path))
        probe = super().probe_video(rel, path, pyav=pyav, sniffed=sniffed)
        self.memo[_probe_key(rel, pyav)] = {"probe": probe.to_dict()}
        return probe


class Replayer(FileObserver):
    """Answers from recorded facts; reads from disk what was not recorded (counted in :attr:`misses`)."""

    def __init__(self, memo: dict[str, Any]):
        self.memo = memo
        self.misses = 0

    def scan_file(self, rel, path, **kwargs):
        from lerobot_tools.checks.deep import scan_from_dict

        hit = self.memo.get(_scan_key(rel, kwargs))
        if hit is None:
            self.misses += 1
            return super().scan_file(rel, path, **kwargs)
        if "raise" in hit:
            raise _reraise(*hit["raise"])
        return scan_from_dict(hit["scan"])

    def probe_video(self, rel, path, *, pyav, sniffed):
        from lerobot_tools.video.probe import VideoProbe

        hit = self.memo.get(_probe_key(rel, pyav))
        if hit is None:
            self.misses += 1
            return super().probe_video(rel, path, pyav=pyav, sniffed=sniffed)
        return VideoProbe(**hit["probe"])


# ---------------------------------------------------------------------- the job
def _size(path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _meta_bytes(ds) -> int:
    """The bytes under ``meta/`` (the work the head of a split dataset stands for); a ``meta/`` linked out of the
    dataset (F013) is not walked (:func:`lerobot_tools._contain.walk_root`): it counts 0."""
    from lerobot_tools._contain import walk_root

    if not walk_root(ds.root, "meta"):
        return 0
    return sum(_size(p) for p in (ds.root / "meta").rglob("*") if p.is_file())


class ValidateJob:
    """See the module docstring."""

    command = "validate"

    def _target(self, spec: dict, index: int):
        return target_from_dict(spec["targets"][index])

    def sizes(self, spec: dict) -> list[DatasetSize]:
        """Per target: data and video file sizes, the metadata as the head; unresolved or unreadable datasets
        count 1 byte, unsplit."""
        return sizes_by_file([target_from_dict(raw) for raw in spec["targets"]],
                             lambda ds: [df.relpath for df in ds.data_files()] + [vf.relpath for vf in ds.video_files()],
                             head=_meta_bytes)

    def run_dataset(self, spec: dict, index: int) -> dict:
        from lerobot_tools.checks.engine import validate_contained

        return report_to_dict(validate_contained(self._target(spec, index), options_from_dict(spec["options"])))

    def run_head(self, spec: dict, index: int) -> None:
        return None  # the dataset-level checks run when the parts are merged

    def run_files(self, spec: dict, index: int, relpaths: list[str]) -> dict:
        from lerobot_tools.checks.engine import validate_contained

        rec = Recorder(relpaths)
        validate_contained(self._target(spec, index), options_from_dict(spec["options"]), observer=rec)
        return {"memo": rec.memo}

    def merge(self, spec: dict, datasets: list) -> list[DatasetReport]:
        from lerobot_tools.checks.engine import validate_contained

        options = options_from_dict(spec["options"])
        reports = []
        for d in datasets:
            if not d.split:
                reports.append(report_from_dict(d.whole))
                continue
            memo: dict[str, Any] = {}
            for _, result in d.files:
                memo.update(result.get("memo") or {})
            reports.append(validate_contained(self._target(spec, d.index), options, observer=Replayer(memo)))
        if spec.get("groups"):  # the cross-dataset checks of mixture files, as a single-process validate runs them
            from lerobot_tools.checks.mixture import check_mixtures

            groups, pos = [], 0
            for arg, n in spec["groups"]:
                groups.append((arg, [self._target(spec, i) for i in range(pos, pos + n)]))
                pos += n
            check_mixtures(groups, reports, options)
            from lerobot_tools.checks.content.across import check_across

            check_across(groups, reports, options)
        return reports

    def write_outputs(self, result: list[DatasetReport], spec: dict, outputs: dict) -> list[str]:
        """``--write-baseline`` (a path from the command line of the process that merges): record every finding.

        Raises:
            UsageError: the baseline cannot be written (one line).
        """
        from pathlib import Path

        from lerobot_tools.errors import UsageError
        from lerobot_tools.validate import record_baseline

        path = outputs.get("write_baseline")
        if path is None:
            return []
        try:
            n = record_baseline(result, Path(path))
        except OSError as exc:
            raise UsageError(f"cannot write the baseline ({exc.strerror or exc})", path) from None
        return [f"recorded {n} finding(s) in {path}"]

    def report(self, result: list[DatasetReport], render: dict, out: IO[str]) -> int:
        """Mark the findings of the launching command's ``--baseline`` (``render["baseline_known"]``: their
        fingerprints, recorded in the run folder's ``render.json``) as known, print, return validate's exit status."""
        from lerobot_tools.report import exit_status, fingerprint, render_json, render_text
        from lerobot_tools.validate import stable

        if render.get("baseline_known") is not None:
            known = set(render["baseline_known"])
            for r in result:
                for f in r.findings:
                    f.known = fingerprint(r.target, stable(f)) in known
        if render.get("format") == "json":
            render_json(result, out)
        else:
            render_text(result, out, color=bool(render.get("color")) and out.isatty())
        return exit_status(result)


JOB = ValidateJob()
