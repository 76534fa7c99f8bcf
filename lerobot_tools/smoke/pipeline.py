"""Running the loaders through a torch ``DataLoader``, checking every batch, the order checks, and the entry
points :func:`smoke_target` and :func:`smoke`."""

from __future__ import annotations

import contextlib
import time
import warnings
from collections import Counter
from typing import Iterable, Iterator

import numpy as np

from lerobot_tools.checks.catalogue import ERROR
from lerobot_tools.dataset.subset import EpisodeSubset
from lerobot_tools.dataset.targets import Target, resolve_targets
from lerobot_tools.errors import LrtoolError, UsageError, one_line
from lerobot_tools.report import DatasetReport
from lerobot_tools.smoke.model import (
    ORDER_CHECK_MAX_FRAMES,
    TOLERATED,
    CheckResult,
    LoaderRun,
    SmokeOptions,
    SmokeReport,
)
from lerobot_tools.smoke.monitor import RssMonitor


def loader_error_line(exc: BaseException) -> str:
    """:func:`lerobot_tools.errors.one_line` of ``exc``, class name included except for lrtool's own errors;
    for an error re-raised from a DataLoader worker, the original exception's line."""
    text = str(exc).strip()
    if "Original Traceback" in text:
        lines = [ln for ln in text.splitlines() if ln.strip()]
        last = lines[-1] if lines else text
        head, sep, tail = last.partition(": ")
        if sep and "." in head and " " not in head:  # "lerobot_tools.x.FrameTimestampError: message"
            return f"{head.rsplit('.', 1)[-1]} in a DataLoader worker: {tail}"
        return last
    return one_line(exc, None, typed=not isinstance(exc, (LrtoolError, LoaderFailed)))


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
def iterate(loader):
    """Yield ``iter(loader)``; an exception from the loop becomes :class:`LoaderFailed` with one line, and the
    iterator's workers are always shut down (see :func:`_close`). The new exception is raised after the
    ``except`` block so it does not chain the worker traceback."""
    it = iter(loader)
    failure = None
    try:
        yield it
    except Exception as exc:
        failure = loader_error_line(exc)
    finally:
        _close(it)
    if failure is not None:
        raise LoaderFailed(failure)


def _selected_episodes(target: Target) -> list[int] | None:
    """The target's episode subset (:class:`~lerobot_tools.dataset.subset.EpisodeSubset`), None = all."""
    sub = EpisodeSubset.of(target)
    if sub.whole:
        return None
    from lerobot_tools.dataset.model import Dataset

    available = Dataset(target.root).episode_indices if sub.episodes is None else []  # type: ignore[arg-type]
    return sub.select(available)


def _percentile(values: list[float], q: float) -> float | None:
    return float(np.percentile(np.asarray(values), q)) if values else None



def timed_batches(loader, run: LoaderRun, mon: RssMonitor, batches: int, size_key: str,
                  cameras: int) -> Iterator[dict]:
    """Draw up to ``batches`` batches from ``loader`` and yield each one for the caller's checks, timing them.

    Counts batches, samples (the length of ``batch[size_key]``) and decoded frames (``cameras`` per sample) into
    ``run``; once the loader is exhausted or ``batches`` are drawn, sets ``run.seconds``, the section's peak
    RSS/PSS from ``mon``, the first-batch latency (s) and, over the batches after the first (the only one when
    there is one), samples/s, decoded frames/s and the p50/p95/p99 batch latency (ms). A batch's latency runs
    from the end of the previous fetch, so it includes the caller's checks of the previous batch.
    """
    lat: list[float] = []
    sizes: list[int] = []
    mon.reset()
    t0 = last = time.perf_counter()
    with iterate(loader) as it:
        for _ in range(batches):
            try:
                batch = next(it)
            except StopIteration:
                break
            now = time.perf_counter()
            lat.append(now - last)
            last = now
            n = len(batch[size_key])
            sizes.append(n)
            run.batches += 1
            run.samples += n
            run.decoded_frames += n * cameras
            yield batch
    run.seconds = last - t0
    run.peak_rss_bytes, run.peak_pss_bytes = mon.section_peak, mon.section_peak_pss
    if lat:
        run.first_batch_s = lat[0]
        steady, steady_samples = (lat[1:], sum(sizes[1:])) if len(lat) > 1 else (lat, sizes[0])
        rate = steady_samples / max(sum(steady), 1e-9)
        run.samples_per_s, run.decoded_frames_per_s = rate, rate * cameras
        ms = [x * 1e3 for x in steady]
        run.p50_ms, run.p95_ms, run.p99_ms = _percentile(ms, 50), _percentile(ms, 95), _percentile(ms, 99)


def check_batch(batch: dict, spec: dict, labels: set[str], video_keys: list[str], problems: dict[str, set]) -> None:
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
    no_task = 0
    for batch in timed_batches(loader, run, mon, opts.batches, "index", len(ds.video_keys)):
        n = len(batch["index"])
        check_batch(batch, spec, labels, ds.video_keys, problems)
        tasks = batch.get("task")
        no_task += n if tasks is None else sum(1 for t in tasks if t is None)
        got_pairs.extend(_pairs(batch))
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
    with iterate(loader) as it:
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


def require_loader_deps() -> None:
    """Import torch, torchcodec and datasets now, so a missing one is "cannot run" before any loader starts.

    Raises:
        UsageError: one of them is not installed (the ``loaders`` extra), or ``HF_ENDPOINT`` is not a URL
            (huggingface_hub, which datasets imports, fails on import then).
    """
    from lerobot_tools._env import endpoint_from_env, endpoint_problem

    endpoint = endpoint_from_env()
    problem = endpoint_problem(endpoint)
    if problem:  # huggingface_hub (imported by datasets) fails on import with a ValueError for such a URL
        raise UsageError(f"HF_ENDPOINT {endpoint!r} is {problem}; set it to an http(s) URL or unset it")
    try:
        import torch  # noqa: F401
        import torchcodec  # noqa: F401
        import datasets  # noqa: F401
    except ImportError as exc:
        raise UsageError(f"lrtool smoke needs torch, torchcodec and datasets ({exc}); "
                         "install lerobot-tools[loaders]") from None


def smoke_target(target: Target, report: DatasetReport, options: SmokeOptions) -> SmokeReport:
    """Smoke-test one resolved target whose validate report is ``report`` (see module docstring)."""
    t0 = time.perf_counter()
    rep = SmokeReport(target=target.spec, root=str(target.root) if target.root else None,
                      codebase_version=report.codebase_version, validate=report)
    rep.blocked = [f for f in report.findings if f.severity == ERROR and not f.known and f.check not in TOLERATED]
    if rep.blocked or target.root is None:
        return rep
    require_loader_deps()
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
                    rep.runs.append(LoaderRun(kind, error=loader_error_line(exc), peak_rss_bytes=mon.section_peak))
                    del exc
            for kind in options.loaders:
                if probe.num_frames <= options.epoch_max_frames:
                    try:
                        rep.checks.append(_epoch_check(kind, meta, episodes, options))
                    except Exception as exc:
                        rep.checks.append(CheckResult(f"{kind}-full-epoch", False, loader_error_line(exc)))
                else:
                    rep.checks.append(CheckResult(f"{kind}-full-epoch", None,
                                                  f"{probe.num_frames} frames > --epoch-max-frames "
                                                  f"{options.epoch_max_frames}"))
            rep.checks.extend(_order_checks(meta, episodes, options, options.loaders))
        except KeyboardInterrupt:
            raise
        except Exception as exc:  # a loader failure is a failed smoke test, reported in one line
            rep.error = loader_error_line(exc)
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
