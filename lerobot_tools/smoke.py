"""``lrtool smoke``: load a dataset the way training will, check what comes out, and measure it.

For each target (a dataset folder, a repo id in the local caches, or each entry of a mixture, with its
episode subset):

1. **Validate first.** The foundation's validate runs on the target. Errors that would break loading
   (missing or LFS-pointer videos, unreadable parquet, drifted schema...; every error-severity check
   except :data:`TOLERATED` ones) stop the smoke test for that target and are reported exactly as
   ``lrtool validate`` reports them, instead of a DataLoader worker traceback.
2. **Run the loaders** (``map``: :class:`FrameDataset` + :class:`EpisodeAwareSampler`; ``stream``:
   :class:`EpisodeShuffleStream`) through a torch ``DataLoader`` for N batches, and check that every key
   has the dtype and shape ``info.json`` declares, every video key decodes, every task string
   resolves, and the batches arrive in the planned order with each sample taken from the episode and
   frame the index says.
3. **Order checks** (no decoding): a full epoch of a small dataset read through the DataLoader (parquet
   columns only) covers every frame exactly once; ``world_size`` simulated ranks are disjoint and cover
   the data; two samplers/streams with the same seed give the same order (and another seed another).
4. **Measure**: samples/s and decoded frames/s (steady state, after the first batch), first-batch
   latency (includes starting the workers), p50/p95/p99 batch latency, and the peak RSS of the whole
   process tree (workers included), sampled by a psutil thread every 20 ms.

Exit status (:func:`exit_status`): 0 all checks passed, 1 a check failed or validate found blocking
errors, 2 the smoke test could not run (e.g. torch missing; raised as :class:`~lerobot_tools.errors.UsageError`).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from typing import IO, Any, Iterable

import numpy as np

from lerobot_tools.checks.catalogue import ERROR
from lerobot_tools.dataset.targets import Target, resolve_targets
from lerobot_tools.errors import LrtoolError, UsageError
from lerobot_tools.report import DatasetReport, Finding

#: Error-severity checks the bundled loaders do not depend on or tolerate: they do not stop the smoke run
#: (the loaders read only the files the metadata references, map rows by episode runs rather than
#: ``dataset_from_index`` or totals, read every tasks.parquet form, and load samples without a task
#: when a label is missing, which the task check then reports).
TOLERATED = {"T002", "T003", "T004", "T006", "T007", "C001", "C002", "C006", "F003", "G003", "M003"}

#: Order checks (ranks, same seed) are skipped above this many frames (they enumerate every position).
ORDER_CHECK_MAX_FRAMES = 2_000_000


@dataclass
class SmokeOptions:
    """Options of ``lrtool smoke``.

    Attributes:
        loaders: ``("map", "stream")`` or one of them.
        batches: batches per loader run (N).
        batch_size: samples per batch (B).
        num_workers: DataLoader worker processes (W).
        world_size: simulated ranks for the disjoint/covering check (R).
        seed: shuffle seed.
        pool_size: episodes interleaved by the stream.
        epoch_max_frames: the full-epoch check runs only on datasets up to this many (selected) frames.
        tolerance_s: video timestamp tolerance in seconds.
        cache_dir: ``datasets`` Arrow cache folder (None = datasets default).
    """

    loaders: tuple[str, ...] = ("map", "stream")
    batches: int = 10
    batch_size: int = 8
    num_workers: int = 0
    world_size: int = 2
    seed: int = 0
    pool_size: int = 8
    epoch_max_frames: int = 20_000
    tolerance_s: float = 1e-4
    cache_dir: str | None = None


@dataclass
class CheckResult:
    """One smoke check: ``ok`` True (passed), False (failed) or None (not run, ``detail`` says why)."""

    name: str
    ok: bool | None
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"check": self.name, "status": {True: "pass", False: "fail", None: "skipped"}[self.ok],
                "detail": self.detail}


@dataclass
class LoaderRun:
    """Measurements and checks of one loader run through a DataLoader.

    Times in seconds, rates per second, RSS in bytes.
    """

    loader: str
    batches: int = 0
    samples: int = 0
    decoded_frames: int = 0
    seconds: float = 0.0
    first_batch_s: float | None = None
    samples_per_s: float | None = None
    decoded_frames_per_s: float | None = None
    p50_ms: float | None = None
    p95_ms: float | None = None
    p99_ms: float | None = None
    peak_rss_bytes: int | None = None
    peak_pss_bytes: int | None = None
    checks: list[CheckResult] = field(default_factory=list)
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items() if k != "checks"}
        for k in ("seconds", "first_batch_s", "samples_per_s", "decoded_frames_per_s", "p50_ms", "p95_ms", "p99_ms"):
            if d[k] is not None:
                d[k] = round(d[k], 4)
        d["checks"] = [c.to_dict() for c in self.checks]
        return d


@dataclass
class SmokeReport:
    """Everything the smoke test found about one target."""

    target: str
    root: str | None
    codebase_version: str | None
    validate: DatasetReport
    blocked: list[Finding] = field(default_factory=list)
    episodes: int | None = None
    frames: int | None = None
    video_keys: list[str] = field(default_factory=list)
    runs: list[LoaderRun] = field(default_factory=list)
    checks: list[CheckResult] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    error: str | None = None
    peak_rss_bytes: int | None = None
    peak_pss_bytes: int | None = None
    seconds: float = 0.0

    @property
    def all_checks(self) -> list[CheckResult]:
        return self.checks + [c for r in self.runs for c in r.checks]

    @property
    def failed(self) -> bool:
        return (bool(self.blocked) or self.error is not None or any(r.error for r in self.runs)
                or any(c.ok is False for c in self.all_checks))

    @property
    def status(self) -> str:
        if self.blocked:
            return "blocked"
        return "fail" if self.failed else "pass"

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target, "root": self.root, "codebase_version": self.codebase_version,
            "status": self.status, "error": self.error,
            "validate": self.validate.to_dict(),
            "episodes": self.episodes, "frames": self.frames, "video_keys": self.video_keys,
            "checks": [c.to_dict() for c in self.checks],
            "loaders": [r.to_dict() for r in self.runs],
            "warnings": self.warnings,
            "peak_rss_bytes": self.peak_rss_bytes,
            "peak_pss_bytes": self.peak_pss_bytes,
            "seconds": round(self.seconds, 3),
        }


# ---------------------------------------------------------------------- process-tree RSS
class RssMonitor:
    """Samples the memory of this process and all its descendants (DataLoader workers) in a thread.

    ``peak`` is the largest RSS sum seen (bytes) since entering, ``section_peak`` since the last
    :meth:`reset`. RSS counts pages shared between a parent and its forked workers once per process, so
    the sum over-counts them; ``peak_pss`` / ``section_peak_pss`` (proportional set size, Linux
    ``smaps_rollup``; None elsewhere) share them out and add up to what the tree really holds.
    """

    def __init__(self, interval_s: float = 0.02):
        import psutil

        self._proc = psutil.Process()
        self._psutil = psutil
        self.interval_s = interval_s
        self.peak = self.section_peak = 0
        self.peak_pss: int | None = None
        self.section_peak_pss: int | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lrtool-rss", daemon=True)

    def sample(self) -> tuple[int, int | None]:
        """``(rss, pss)`` in bytes of this process plus its descendants right now (pss None if unknown)."""
        rss, pss = 0, 0
        procs = [self._proc]
        try:
            procs += self._proc.children(recursive=True)
        except self._psutil.Error:
            pass
        for p in procs:
            try:
                full = p.memory_full_info()
            except (self._psutil.Error, AttributeError, NotImplementedError):
                try:
                    rss += p.memory_info().rss
                except self._psutil.Error:
                    pass
                pss = None
                continue
            rss += full.rss
            if pss is not None and getattr(full, "pss", None) is not None:
                pss += full.pss
            else:
                pss = None
        return rss, pss

    def _record(self) -> None:
        rss, pss = self.sample()
        self.peak = max(self.peak, rss)
        self.section_peak = max(self.section_peak, rss)
        if pss is not None:
            self.peak_pss = max(self.peak_pss or 0, pss)
            self.section_peak_pss = max(self.section_peak_pss or 0, pss)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._record()
            self._stop.wait(self.interval_s)

    def reset(self) -> None:
        """Start a new section: the section peaks restart from the current values (``peak`` keeps the maximum)."""
        self.section_peak, self.section_peak_pss = 0, None
        self._record()

    def __enter__(self) -> "RssMonitor":
        self._record()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._record()


# ---------------------------------------------------------------------- helpers
def one_line(exc: BaseException) -> str:
    """A one-line description of ``exc``; for an error re-raised from a DataLoader worker, the original line."""
    text = str(exc).strip()
    if "Original Traceback" in text:
        lines = [ln for ln in text.splitlines() if ln.strip()]
        last = lines[-1] if lines else text
        head, sep, tail = last.partition(": ")
        if sep and "." in head and " " not in head:  # "lerobot_tools.x.FrameTimestampError: message"
            return f"{head.rsplit('.', 1)[-1]} in a DataLoader worker: {tail}"
        return last
    line = text.splitlines()[0] if text else ""
    return line if isinstance(exc, (LrtoolError, LoaderFailed)) else f"{type(exc).__name__}: {line}"


class LoaderFailed(Exception):
    """A loader raised while iterating; carries the one-line message only (no traceback, no iterator)."""


def _close(it) -> None:
    """Shut a DataLoader iterator's workers down now, in this process.

    An exception raised through ``next(it)`` keeps the iterator alive through its traceback; collected
    later inside a forked worker of the next DataLoader, its ``__del__`` would print a traceback
    ("can only test a child process"). Shutting down explicitly and collecting avoids that.
    """
    import gc

    shutdown = getattr(it, "_shutdown_workers", None)
    if shutdown is not None:
        shutdown()
    del it
    gc.collect()


@contextlib.contextmanager
def _iterate(loader):
    """Yield ``iter(loader)``; an exception from the loop becomes :class:`LoaderFailed` with one line, and the
    iterator's workers are always shut down (see :func:`_close`). The new exception is raised after the
    ``except`` block so it does not chain the worker traceback."""
    it = iter(loader)
    failure = None
    try:
        yield it
    except Exception as exc:
        failure = one_line(exc)
    finally:
        _close(it)
    if failure is not None:
        raise LoaderFailed(failure)


def _selected_episodes(target: Target) -> list[int] | None:
    if target.episodes is None and target.excluded_episodes is None:
        return None
    from lerobot_tools.dataset.model import Dataset

    eps = target.episodes if target.episodes is not None else Dataset(target.root).episode_indices  # type: ignore[arg-type]
    excluded = set(target.excluded_episodes or [])
    return [e for e in eps if e not in excluded]


def _percentile(values: list[float], q: float) -> float | None:
    return float(np.percentile(np.asarray(values), q)) if values else None


def _check_batch(batch: dict, spec: dict, labels: set[str], video_keys: list[str], problems: dict[str, set]) -> None:
    import torch

    n = None
    for key, (dtype, shape) in spec.items():
        if key not in batch:
            problems["keys"].add(f"{key}: missing from the batch")
            continue
        v = batch[key]
        if dtype == "string":
            if not isinstance(v, list) or not all(isinstance(s, str) for s in v):
                problems["keys"].add(f"{key}: expected strings, got {type(v).__name__}")
            continue
        if not isinstance(v, torch.Tensor):
            problems["keys"].add(f"{key}: expected a tensor, got {type(v).__name__}")
            continue
        n = v.shape[0] if n is None else n
        got_dtype = str(v.dtype).replace("torch.", "")
        if got_dtype != dtype or tuple(v.shape[1:]) != tuple(shape):
            target = "video" if key in video_keys else "keys"
            problems[target].add(f"{key}: {got_dtype} {tuple(v.shape[1:])} per sample, info.json says "
                                 f"{dtype} {tuple(shape)}")
    for key in video_keys:
        if key not in batch:
            problems["video"].add(f"{key}: no frames in the batch")
    tasks = batch.get("task")
    if tasks is None:
        problems["tasks"].add("samples carry no task (their label or task_index is missing from the task table)")
        return
    for t in tasks:
        if t is None:
            problems["tasks"].add("samples carry no task (their label or task_index is missing from the task table)")
        elif t not in labels:
            problems["tasks"].add(f"task {t!r} is not in the task table")


def _pairs(batch: dict) -> list[tuple[int, int]]:
    return list(zip(batch["episode_index"].tolist(), batch["frame_index"].tolist()))


def _run_loader(kind: str, root, episodes, opts: SmokeOptions, mon: RssMonitor, labels: set[str]) -> LoaderRun:
    from torch.utils.data import DataLoader

    from lerobot_tools.loaders import EpisodeAwareSampler, EpisodeShuffleStream, FrameDataset, collate_frames

    run = LoaderRun(kind)
    ds = FrameDataset(root, episodes=episodes, tolerance_s=opts.tolerance_s, cache_dir=opts.cache_dir)
    spec = ds.item_spec()
    if kind == "map":
        sampler = EpisodeAwareSampler(ds, seed=opts.seed, rank=0, world_size=1)
        loader = DataLoader(ds, batch_size=opts.batch_size, sampler=sampler, num_workers=opts.num_workers,
                            collate_fn=collate_frames)
        planned = sampler.indices(np.arange(min(len(sampler), opts.batches * opts.batch_size)))
    else:
        stream = EpisodeShuffleStream(ds, batch_size=opts.batch_size, pool_size=opts.pool_size, seed=opts.seed,
                                      rank=0, world_size=1)
        loader = DataLoader(stream, batch_size=opts.batch_size, num_workers=opts.num_workers,
                            collate_fn=collate_frames)
        planned = []
        for i in stream.plan():
            if len(planned) == opts.batches * opts.batch_size:
                break
            planned.append(i)
        planned = np.asarray(planned, dtype=np.int64)
    problems: dict[str, set] = {"keys": set(), "video": set(), "tasks": set()}
    got_pairs: list[tuple[int, int]] = []
    lat: list[float] = []
    sizes: list[int] = []
    no_task = 0
    mon.reset()
    t0 = time.perf_counter()
    last = t0
    with _iterate(loader) as it:
        for _ in range(opts.batches):
            try:
                batch = next(it)
            except StopIteration:
                break
            now = time.perf_counter()
            lat.append(now - last)
            last = now
            n = len(batch["index"])
            sizes.append(n)
            run.batches += 1
            run.samples += n
            run.decoded_frames += n * len(ds.video_keys)
            _check_batch(batch, spec, labels, ds.video_keys, problems)
            tasks = batch.get("task")
            no_task += n if tasks is None else sum(1 for t in tasks if t is None)
            got_pairs.extend(_pairs(batch))
    run.seconds = last - t0
    run.peak_rss_bytes, run.peak_pss_bytes = mon.section_peak, mon.section_peak_pss
    if lat:
        run.first_batch_s = lat[0]
        steady, steady_samples = (lat[1:], sum(sizes[1:])) if len(lat) > 1 else (lat, sizes[0])
        rate = steady_samples / max(sum(steady), 1e-9)
        run.samples_per_s = rate
        run.decoded_frames_per_s = rate * len(ds.video_keys)
        run.p50_ms = _percentile([x * 1e3 for x in steady], 50)
        run.p95_ms = _percentile([x * 1e3 for x in steady], 95)
        run.p99_ms = _percentile([x * 1e3 for x in steady], 99)
    run.checks.append(CheckResult("shapes-dtypes", not problems["keys"],
                                  "; ".join(sorted(problems["keys"])[:5]) or f"{len(spec)} keys match info.json"))
    if ds.video_keys:
        run.checks.append(CheckResult("video-decodes", not problems["video"],
                                      "; ".join(sorted(problems["video"])[:5])
                                      or f"{len(ds.video_keys)} video key(s), {run.decoded_frames} frames decoded"))
    else:
        run.checks.append(CheckResult("video-decodes", None, "no video keys"))
    task_detail = "; ".join(sorted(problems["tasks"])[:5])
    if no_task:
        task_detail = f"{no_task} of {run.samples} " + task_detail
    run.checks.append(CheckResult("tasks-resolve", not problems["tasks"],
                                  task_detail or "every sample's task is in the task table"))
    exp = list(zip(*[a.tolist() for a in ds.locate(planned[: len(got_pairs)])])) if got_pairs else []
    ok = got_pairs == exp
    if ok:
        detail = f"{len(got_pairs)} samples in the planned order, each from its episode and frame"
    else:
        first_bad = next((i for i, (a, b) in enumerate(zip(got_pairs, exp)) if a != b), min(len(got_pairs), len(exp)))
        got = got_pairs[first_bad] if first_bad < len(got_pairs) else None
        want = exp[first_bad] if first_bad < len(exp) else None
        detail = (f"sample {first_bad} is (episode, frame) {got}, the plan says {want}")
    run.checks.append(CheckResult("order-and-alignment", ok, detail))
    return run


def _epoch_check(kind: str, root, episodes, opts: SmokeOptions) -> CheckResult:
    """Read a full epoch (parquet columns only) through the DataLoader; every frame exactly once."""
    from torch.utils.data import DataLoader

    from lerobot_tools.loaders import EpisodeAwareSampler, EpisodeShuffleStream, FrameDataset, collate_frames

    ds = FrameDataset(root, episodes=episodes, decode_video=False, cache_dir=opts.cache_dir)
    if kind == "map":
        loader = DataLoader(ds, batch_size=opts.batch_size, num_workers=opts.num_workers, collate_fn=collate_frames,
                            sampler=EpisodeAwareSampler(ds, seed=opts.seed, rank=0, world_size=1))
    else:
        loader = DataLoader(EpisodeShuffleStream(ds, batch_size=opts.batch_size, pool_size=opts.pool_size,
                                                 seed=opts.seed, rank=0, world_size=1),
                            batch_size=opts.batch_size, num_workers=opts.num_workers, collate_fn=collate_frames)
    seen: Counter = Counter()
    with _iterate(loader) as it:
        for batch in it:
            seen.update(_pairs(batch))
    expected = {(e, f) for e, n in zip(ds.episodes, ds.episode_lengths.tolist()) for f in range(n)}
    dupes = sum(1 for p, c in seen.items() if c > 1)
    missing = len(expected - set(seen))
    extra = len(set(seen) - expected)
    ok = not (dupes or missing or extra)
    w = f" with {opts.num_workers} worker(s)" if opts.num_workers else ""
    detail = (f"{len(expected)} frames, each exactly once{w}" if ok else
              f"{dupes} frame(s) repeated, {missing} missing, {extra} unexpected{w}")
    return CheckResult(f"{kind}-full-epoch", ok, detail)


def _order_checks(root, episodes, opts: SmokeOptions, kinds: Iterable[str]) -> list[CheckResult]:
    from lerobot_tools.loaders import EpisodeAwareSampler, EpisodeShuffleStream, FrameDataset

    ds = FrameDataset(root, episodes=episodes, decode_video=False, cache_dir=opts.cache_dir)
    N, R = ds.num_frames, opts.world_size
    out: list[CheckResult] = []
    if N > ORDER_CHECK_MAX_FRAMES:
        why = f"{N} frames > {ORDER_CHECK_MAX_FRAMES}"
        return [CheckResult(f"{k}-{c}", None, why) for k in kinds for c in ("ranks", "same-seed")]
    for kind in kinds:
        counts = np.zeros(N, dtype=np.int64)
        sizes = []
        for r in range(R):
            if kind == "map":
                s = EpisodeAwareSampler(ds, seed=opts.seed, rank=r, world_size=R)
                idx = s.indices(np.arange(r, N, R))
            else:
                st = EpisodeShuffleStream(ds, seed=opts.seed, pool_size=opts.pool_size, rank=r, world_size=R)
                idx = np.fromiter(st.plan(), dtype=np.int64)
            sizes.append(len(idx))
            np.add.at(counts, idx, 1)
        ok = bool((counts == 1).all())
        out.append(CheckResult(f"{kind}-ranks", ok,
                               f"{R} simulated ranks of {'/'.join(map(str, sizes))} frames, disjoint and covering"
                               if ok else f"{int((counts > 1).sum())} frame(s) on several ranks, "
                                          f"{int((counts == 0).sum())} on none"))
        k = min(N, 100_000)
        if kind == "map":
            a = EpisodeAwareSampler(ds, seed=opts.seed, world_size=1, rank=0).indices(np.arange(k))
            b = EpisodeAwareSampler(ds, seed=opts.seed, world_size=1, rank=0).indices(np.arange(k))
            c = EpisodeAwareSampler(ds, seed=opts.seed + 1, world_size=1, rank=0).indices(np.arange(k))
        else:
            def first(seed):
                st = EpisodeShuffleStream(ds, seed=seed, pool_size=opts.pool_size, rank=0, world_size=1)
                return np.fromiter((i for _, i in zip(range(k), st.plan())), dtype=np.int64)
            a, b, c = first(opts.seed), first(opts.seed), first(opts.seed + 1)
        same = bool(np.array_equal(a, b))
        differs = N < 3 or not np.array_equal(a, c)
        out.append(CheckResult(f"{kind}-same-seed", same and differs,
                               f"seed {opts.seed} twice gives the same order ({k} samples compared); seed "
                               f"{opts.seed + 1} another" if same and differs else
                               ("two runs with the same seed differ" if not same else "another seed gives the same order")))
    return out


# ---------------------------------------------------------------------- entry points
def smoke_target(target: Target, report: DatasetReport, options: SmokeOptions) -> SmokeReport:
    """Smoke-test one resolved target whose validate report is ``report`` (see module docstring)."""
    t0 = time.perf_counter()
    rep = SmokeReport(target=target.spec, root=str(target.root) if target.root else None,
                      codebase_version=report.codebase_version, validate=report)
    rep.blocked = [f for f in report.findings if f.severity == ERROR and not f.known and f.check not in TOLERATED]
    if rep.blocked or target.root is None:
        return rep
    try:
        import torch  # noqa: F401  (fail early, as "cannot run")
        import torchcodec  # noqa: F401
        import datasets  # noqa: F401
    except ImportError as exc:
        raise UsageError(f"lrtool smoke needs torch, torchcodec and datasets ({exc}); "
                         "install lerobot-tools[loaders]") from None
    from lerobot_tools.dataset.model import Dataset

    with warnings.catch_warnings(record=True) as caught, RssMonitor() as mon:
        warnings.simplefilter("always")
        try:
            episodes = _selected_episodes(target)
            meta = Dataset(target.root)  # type: ignore[arg-type]
            try:
                labels = set(meta.tasks.labels)
            except LrtoolError:
                labels = set()
            from lerobot_tools.loaders import FrameDataset

            probe = FrameDataset(meta, episodes=episodes, decode_video=False, cache_dir=options.cache_dir)
            rep.episodes, rep.frames, rep.video_keys = len(probe.episodes), probe.num_frames, list(meta.video_keys)
            for kind in options.loaders:
                try:
                    rep.runs.append(_run_loader(kind, meta, episodes, options, mon, labels))
                except Exception as exc:  # this loader failed; the others still run
                    rep.runs.append(LoaderRun(kind, error=one_line(exc), peak_rss_bytes=mon.section_peak))
                    del exc
            for kind in options.loaders:
                if probe.num_frames <= options.epoch_max_frames:
                    try:
                        rep.checks.append(_epoch_check(kind, meta, episodes, options))
                    except Exception as exc:
                        rep.checks.append(CheckResult(f"{kind}-full-epoch", False, one_line(exc)))
                else:
                    rep.checks.append(CheckResult(f"{kind}-full-epoch", None,
                                                  f"{probe.num_frames} frames > --epoch-max-frames "
                                                  f"{options.epoch_max_frames}"))
            rep.checks.extend(_order_checks(meta, episodes, options, options.loaders))
        except KeyboardInterrupt:
            raise
        except Exception as exc:  # a loader failure is a failed smoke test, reported in one line
            rep.error = one_line(exc)
    rep.peak_rss_bytes, rep.peak_pss_bytes = mon.peak, mon.peak_pss
    seen: list[str] = []
    for w in caught:
        msg = str(w.message)
        if w.category.__name__ == "LoaderWarning" and msg not in seen:
            seen.append(msg)
    rep.warnings = seen
    rep.seconds = time.perf_counter() - t0
    return rep


def smoke(target_args: Iterable[str], options: SmokeOptions | None = None) -> list[SmokeReport]:
    """Resolve TARGET arguments, validate each dataset, then smoke-test those validate does not block.

    Raises:
        UsageError: a mixture file cannot be read, or torch/torchcodec/datasets are missing.
    """
    from lerobot_tools.checks.engine import ValidateOptions
    from lerobot_tools.validate import validate_resolved

    options = options or SmokeOptions()
    targets = resolve_targets(list(target_args))
    reports = validate_resolved(targets, ValidateOptions(tolerance_s=options.tolerance_s))
    return [smoke_target(t, r, options) for t, r in zip(targets, reports)]


def exit_status(reports: list[SmokeReport]) -> int:
    """0 when every target passed, else 1."""
    return 1 if any(r.failed for r in reports) else 0


def _mb(n: int | None) -> str:
    return "n/a" if n is None else f"{n / 2**20:.0f} MB"


def _fmt(v: float | None, unit: str = "", digits: int = 1) -> str:
    return "n/a" if v is None else f"{v:.{digits}f}{unit}"


def render_text(reports: list[SmokeReport], out: IO[str]) -> None:
    """Text report: validate's own report for blocked targets, then per target the runs and checks."""
    from lerobot_tools.report import render_text as render_validate

    blocked = [r for r in reports if r.blocked]
    if blocked:
        render_validate([r.validate for r in blocked], out)
        for r in blocked:
            ids = ", ".join(sorted({f.check for f in r.blocked}))
            out.write(f"smoke: {r.target}: not run: validate found errors that break loading ({ids})\n")
        out.write("\n")
    for r in reports:
        if r.blocked:
            continue
        version = f" ({r.codebase_version})" if r.codebase_version else ""
        out.write(f"{r.target}{version}\n")
        if r.frames is not None:
            out.write(f"  {r.episodes} episode(s), {r.frames} frame(s), video keys: "
                      f"{', '.join(r.video_keys) or 'none'}\n")
        other = [f for f in r.validate.findings if not f.known]
        if other:
            ids = ", ".join(f"{f.check} ({f.severity})" for f in other)
            out.write(f"  validate: not blocking: {ids}\n")
        for w in r.warnings:
            out.write(f"  warning: {w}\n")
        for run in r.runs:
            if run.error:
                out.write(f"  FAIL  loader {run.loader}: {run.error}\n")
                continue
            out.write(f"  loader {run.loader}: {run.batches} batch(es), {run.samples} samples; "
                      f"{_fmt(run.samples_per_s)} samples/s, {_fmt(run.decoded_frames_per_s)} decoded frames/s; "
                      f"first batch {_fmt(run.first_batch_s and run.first_batch_s * 1e3, ' ms', 0)}; "
                      f"batch p50/p95/p99 {_fmt(run.p50_ms)}/{_fmt(run.p95_ms)}/{_fmt(run.p99_ms)} ms; "
                      f"peak RSS {_mb(run.peak_rss_bytes)} (PSS {_mb(run.peak_pss_bytes)})\n")
            for c in run.checks:
                out.write(_check_line(c, f"{run.loader} "))
        for c in r.checks:
            out.write(_check_line(c, ""))
        if r.error:
            out.write(f"  FAIL  loader error: {r.error}\n")
        out.write(f"  peak RSS of the process tree: {_mb(r.peak_rss_bytes)} (PSS {_mb(r.peak_pss_bytes)}, "
                  f"shared pages counted once); {r.seconds:.1f} s\n\n")
    n_fail = sum(1 for r in reports if r.failed)
    out.write(f"Smoke: {len(reports)} dataset(s), {n_fail} failed, {len(blocked)} blocked by validate\n")


def _check_line(c: CheckResult, prefix: str) -> str:
    tag = {True: "pass", False: "FAIL", None: "skip"}[c.ok]
    return f"  {tag:<5} {prefix}{c.name}: {c.detail}\n"


def render_json(reports: list[SmokeReport], out: IO[str]) -> None:
    """One JSON document: ``datasets`` (per target, with the validate report embedded) and ``summary``."""
    doc = {
        "datasets": [r.to_dict() for r in reports],
        "summary": {"datasets": len(reports), "failed": sum(1 for r in reports if r.failed),
                    "blocked": sum(1 for r in reports if r.blocked), "exit_status": exit_status(reports)},
    }
    json.dump(doc, out, indent=2, ensure_ascii=False)
    out.write("\n")
