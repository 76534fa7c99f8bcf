"""``lrtool smoke MIXTURE``: load a whole mixture the way pretraining will, check it, and measure it.

1. **Validate the mixture**: every dataset, then the cross-dataset checks (family X). Errors that break
   loading (:data:`~lerobot_tools.smoke.model.TOLERATED` aside, and the X errors that concern only
   training, :data:`MIXTURE_TOLERATED`) stop the run and are printed as ``lrtool validate`` prints them.
2. **Build** a :class:`~lerobot_tools.loaders.MixtureDataset` (timed; how many Arrow caches were cold).
3. **Run the loaders** (weighted :class:`~lerobot_tools.loaders.EpisodeAwareSampler`, weighted
   :class:`~lerobot_tools.loaders.EpisodeShuffleStream`) through a DataLoader with workers for N batches
   and check every batch: the common schema (names, dtypes, shapes), every camera decodes, task strings
   resolve, samples arrive in the planned order from the planned dataset, episode and frame, and each
   dataset is drawn in proportion to its weight (map: within a binomial tolerance over the batches run,
   and exactly over an epoch; stream: exactly over an epoch).
4. **Order checks** without decoding: a full epoch of a small mixture through the DataLoader yields exactly
   the planned draws; R simulated ranks take disjoint positions of one epoch; the same seed gives the
   same order and another seed another.
5. **Measure**: total samples/s and decoded frames/s, first-batch latency, p50/p95/p99 batch latency, peak
   RSS/PSS of the process tree; and per dataset, one batch read in this process: samples/s and decoded
   frames/s, so a slow or failing dataset is named.
"""

from __future__ import annotations

import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np

from lerobot_tools.errors import LrtoolError
from lerobot_tools.findings import ERROR, DatasetReport, Finding
from lerobot_tools.smoke.model import (
    ORDER_CHECK_MAX_FRAMES, TOLERATED, CheckResult, LoaderRun, SmokeOptions, SmokeOutcome,
)
from lerobot_tools.smoke.monitor import RssMonitor
from lerobot_tools.smoke.pipeline import (
    check_batch,
    iterate,
    loader_error_line,
    require_loader_deps,
    timed_batches,
)
from lerobot_tools.smoke.render import fmt, mb, render_runs

#: Mixture errors that do not stop the smoke run: they concern normalisation statistics (X008) and OpenTau's
#: prompt substitutions (X009), which the bundled loaders do not use; the report still shows them.
MIXTURE_TOLERATED = {"X008", "X009"}


@dataclass
class MixtureSmokeReport(SmokeOutcome):
    """Everything ``lrtool smoke MIXTURE`` found. Times in seconds, rates per second, RSS in bytes."""

    target: str
    validate: list[DatasetReport]
    blocked: list[tuple[str, Finding]] = field(default_factory=list)
    datasets: list[dict[str, Any]] = field(default_factory=list)
    frames: int | None = None
    names: list[str] = field(default_factory=list)
    construct_s: float | None = None
    cold_datasets: int | None = None
    runs: list[LoaderRun] = field(default_factory=list)
    checks: list[CheckResult] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    error: str | None = None
    peak_rss_bytes: int | None = None
    peak_pss_bytes: int | None = None
    seconds: float = 0.0

    def _also_failed(self) -> bool:
        return any(d.get("error") for d in self.datasets)

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target, "kind": "mixture", "status": self.status, "error": self.error,
            "validate": [r.to_dict() for r in self.validate],
            "blocked": [{"dataset": t, **f.to_dict()} for t, f in self.blocked],
            "frames": self.frames, "names": self.names, "construct_s": _r(self.construct_s),
            "cold_datasets": self.cold_datasets, "datasets": self.datasets,
            "checks": [c.to_dict() for c in self.checks], "loaders": [r.to_dict() for r in self.runs],
            **self._measures(),
        }


def _r(v: float | None) -> float | None:
    return None if v is None else round(v, 4)


def _triples(mix, indices) -> list[tuple[int, int, int]]:
    d, e, f = mix.locate(np.asarray(indices, dtype=np.int64))
    return list(zip(d.tolist(), e.tolist(), f.tolist()))


def _batch_triples(batch: dict) -> list[tuple[int, int, int]]:
    return list(zip(batch["dataset_index"].tolist(), batch["episode_index"].tolist(), batch["frame_index"].tolist()))


def _make(kind: str, mix, opts: SmokeOptions, *, rank: int = 0, world: int = 1, seed: int | None = None):
    from lerobot_tools.loaders import EpisodeAwareSampler, EpisodeShuffleStream

    seed = opts.seed if seed is None else seed
    if kind == "map":
        return EpisodeAwareSampler(mix, seed=seed, rank=rank, world_size=world)
    return EpisodeShuffleStream(mix, batch_size=opts.batch_size, pool_size=opts.pool_size, seed=seed, rank=rank,
                                world_size=world)


def _plan(kind: str, order, n: int | None = None) -> np.ndarray:
    if kind == "map":
        count = len(order) if n is None else min(n, len(order))
        return order.indices(np.arange(order.rank, order.rank + count * order.world_size, order.world_size))
    out = []
    for i in order.plan():
        if n is not None and len(out) == n:
            break
        out.append(i)
    return np.asarray(out, dtype=np.int64)


def _weights_check(name: str, counts: np.ndarray, probs: np.ndarray, labels: list[str], exact: bool) -> CheckResult:
    n = int(counts.sum())
    expected = n * probs
    if exact:
        ok = bool((np.abs(counts - expected) <= 1).all())
        how = "exactly (+-1 for rounding)"
    else:
        tol = 4 * np.sqrt(np.maximum(expected * (1 - probs), 0)) + 1
        ok = bool((np.abs(counts - expected) <= tol).all())
        how = "within 4 sigma + 1 (binomial)"
    worst = int(np.argmax(np.abs(counts - expected) / np.maximum(expected, 1)))
    shown = ", ".join(f"{labels[i]} {int(counts[i])}/{expected[i]:.1f}" for i in range(min(len(labels), 4)))
    more = " ..." if len(labels) > 4 else ""
    detail = (f"{n} draws in proportion to the weights {how}: drawn/expected {shown}{more}" if ok else
              f"{labels[worst]} drawn {int(counts[worst])} times, expected {expected[worst]:.1f} of {n} draws")
    return CheckResult(name, ok, detail)


def _run(kind: str, mix, opts: SmokeOptions, mon: RssMonitor, labels: set[str], names: list[str]) -> LoaderRun:
    from torch.utils.data import DataLoader

    from lerobot_tools.loaders import collate_frames

    run = LoaderRun(kind)
    order = _make(kind, mix, opts)
    if kind == "map":
        loader = DataLoader(mix, batch_size=opts.batch_size, sampler=order, num_workers=opts.num_workers,
                            collate_fn=collate_frames)
    else:
        loader = DataLoader(order, batch_size=opts.batch_size, num_workers=opts.num_workers, collate_fn=collate_frames)
    planned = _plan(kind, order, opts.batches * opts.batch_size)
    spec = mix.item_spec()
    cameras = [n for n, s in mix.schema.common.items() if s.kind == "camera" and mix.decode_video]
    problems: dict[str, set] = {"keys": set(), "video": set(), "tasks": set()}
    got: list[tuple[int, int, int]] = []
    for batch in timed_batches(loader, run, mon, opts.batches, "dataset_index", len(cameras)):
        check_batch(batch, spec, labels, cameras, problems)
        got.extend(_batch_triples(batch))
    run.checks.append(CheckResult("schema", not problems["keys"], "; ".join(sorted(problems["keys"])[:5])
                                  or f"{len(spec)} common keys with the mixture's dtypes and shapes in every batch"))
    run.checks.append(CheckResult("video-decodes", not problems["video"], "; ".join(sorted(problems["video"])[:5])
                                  or f"{len(cameras)} camera(s), {run.decoded_frames} frames decoded")
                      if cameras else CheckResult("video-decodes", None, "no common camera"))
    run.checks.append(CheckResult("tasks-resolve", not problems["tasks"], "; ".join(sorted(problems["tasks"])[:5])
                                  or "every sample's task is in its dataset's task table"))
    want = _triples(mix, planned[: len(got)]) if got else []
    bad = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), None)
    if bad is None and len(got) == len(want):
        run.checks.append(CheckResult("order-and-alignment", True, f"{len(got)} samples in the planned order, each "
                                      "from its dataset, episode and frame"))
    else:
        i = bad if bad is not None else min(len(got), len(want))
        run.checks.append(CheckResult("order-and-alignment", False, f"sample {i} is (dataset, episode, frame) "
                                      f"{got[i] if i < len(got) else None}, the plan says {want[i] if i < len(want) else None}"))
    if got and kind == "map":
        counts = np.bincount([t[0] for t in got], minlength=len(names))
        run.checks.append(_weights_check("weights-in-batches", counts, mix_probs(mix, order), names, exact=False))
    return run


def mix_probs(mix, order) -> np.ndarray:
    """Per-dataset probabilities an order draws with (its epoch quotas normalised)."""
    q = np.asarray(order.dataset_counts(), dtype=np.float64)
    return q / max(q.sum(), 1)


def _epoch_and_order_checks(mix_nv, opts: SmokeOptions, names: list[str]) -> list[CheckResult]:
    """Full epoch through the DataLoader (small mixtures), exact weights per epoch, ranks, same seed."""
    from torch.utils.data import DataLoader

    from lerobot_tools.loaders import collate_frames

    out: list[CheckResult] = []
    for kind in opts.loaders:
        order = _make(kind, mix_nv, opts)
        total = order.total
        quotas = np.asarray(order.dataset_counts())
        out.append(_weights_check(f"{kind}-weights-per-epoch", quotas, mix_nv.weights, names, exact=True))
        if total > ORDER_CHECK_MAX_FRAMES:
            out += [CheckResult(f"{kind}-{c}", None, f"{total} draws > {ORDER_CHECK_MAX_FRAMES}")
                    for c in ("full-epoch", "ranks", "same-seed")]
            continue
        plan = _plan(kind, order)
        if total <= opts.epoch_max_frames:
            if kind == "map":
                loader = DataLoader(mix_nv, batch_size=opts.batch_size, sampler=order, num_workers=opts.num_workers,
                                    collate_fn=collate_frames)
            else:
                loader = DataLoader(order, batch_size=opts.batch_size, num_workers=opts.num_workers,
                                    collate_fn=collate_frames)
            seen: Counter = Counter()
            try:
                with iterate(loader) as it:
                    for batch in it:
                        seen.update(_batch_triples(batch))
                ok = seen == Counter(_triples(mix_nv, plan))
                w = f" with {opts.num_workers} worker(s)" if opts.num_workers else ""
                out.append(CheckResult(f"{kind}-full-epoch", ok, f"{total} draws, exactly the planned ones{w}" if ok
                                       else f"{sum((seen - Counter(_triples(mix_nv, plan))).values())} unplanned "
                                            f"draw(s) in an epoch of {total}"))
            except Exception as exc:
                out.append(CheckResult(f"{kind}-full-epoch", False, loader_error_line(exc)))
        else:
            out.append(CheckResult(f"{kind}-full-epoch", None, f"{total} draws > --epoch-max-frames "
                                   f"{opts.epoch_max_frames}"))
        R = opts.world_size
        shares = [_plan(kind, _make(kind, mix_nv, opts, rank=r, world=R)) for r in range(R)]
        ok = Counter(np.concatenate(shares).tolist()) == Counter(plan.tolist())
        if kind == "map":  # rank r takes positions r, r + R, ...: interleaving the shares rebuilds the order
            ok = ok and all(np.array_equal(shares[r], plan[r::R]) for r in range(R))
        out.append(CheckResult(f"{kind}-ranks", ok, f"{R} simulated ranks of {'/'.join(str(len(s)) for s in shares)} "
                               "draws: disjoint positions of one epoch" if ok else
                               "the ranks' shares are not disjoint positions of the epoch"))
        k = min(total, 100_000)
        a, b = _plan(kind, _make(kind, mix_nv, opts), k), _plan(kind, _make(kind, mix_nv, opts), k)
        c = _plan(kind, _make(kind, mix_nv, opts, seed=opts.seed + 1), k)
        same, differs = bool(np.array_equal(a, b)), total < 3 or not np.array_equal(a, c)
        out.append(CheckResult(f"{kind}-same-seed", same and differs,
                               f"seed {opts.seed} twice gives the same order ({k} draws); seed {opts.seed + 1} another"
                               if same and differs else ("two runs with the same seed differ" if not same
                                                         else "another seed gives the same order")))
    return out


def _per_dataset(mix, opts: SmokeOptions, names: list[str], drawn: np.ndarray) -> list[dict[str, Any]]:
    """One batch of each dataset read in this process: samples/s and decoded frames/s, or its error."""
    rng = np.random.default_rng(opts.seed)
    cameras = sum(1 for s in mix.schema.common.values() if s.kind == "camera" and mix.decode_video)
    out = []
    for d, name in enumerate(names):
        lo, hi = int(mix.dataset_offsets[d]), int(mix.dataset_offsets[d + 1])
        row: dict[str, Any] = {"dataset": name, "root": str(mix.members[d].root), "weight": round(float(mix.weights[d]), 6),
                               "frames": hi - lo, "fps": mix.members[d].fps,
                               "codebase_version": mix.members[d].codebase_version, "drawn": int(drawn[d])}
        idx = rng.integers(lo, hi, size=min(opts.batch_size, hi - lo)).tolist() if hi > lo else []
        try:
            mix.member(d)  # open outside the timing
            t0 = time.perf_counter()
            mix.__getitems__(idx)
            dt = max(time.perf_counter() - t0, 1e-9)
            row.update(samples_per_s=round(len(idx) / dt, 2), decoded_frames_per_s=round(len(idx) * cameras / dt, 2))
        except Exception as exc:
            row["error"] = loader_error_line(exc)
        out.append(row)
    return out


def smoke_mixture(path: str, options: SmokeOptions | None = None) -> MixtureSmokeReport:
    """Smoke-test a whole mixture file (see module docstring).

    Raises:
        UsageError: the mixture file cannot be read, or torch/torchcodec/datasets are missing.
    """
    from lerobot_tools.checks.context import ValidateOptions
    from lerobot_tools.validate import validate

    opts = options or SmokeOptions()
    t0 = time.perf_counter()
    reports = validate([path], ValidateOptions(tolerance_s=opts.tolerance_s))
    rep = MixtureSmokeReport(target=str(path), validate=reports)
    rep.blocked = [(r.target, f) for r in reports for f in r.findings if f.severity == ERROR and not f.known
                   and f.check not in TOLERATED and f.check not in MIXTURE_TOLERATED]
    if rep.blocked:
        rep.seconds = time.perf_counter() - t0
        return rep
    require_loader_deps()
    from lerobot_tools.dataset.model import Dataset
    from lerobot_tools.loaders import MixtureDataset

    with warnings.catch_warnings(record=True) as caught, RssMonitor() as mon:
        warnings.simplefilter("always")
        try:
            t1 = time.perf_counter()
            mix = MixtureDataset(path, tolerance_s=opts.tolerance_s, cache_dir=opts.cache_dir)
            rep.construct_s, rep.cold_datasets = time.perf_counter() - t1, mix.cold_datasets
            rep.frames, rep.names = mix.num_frames, list(mix.names)
            names = [m.name for m in mix.members]
            labels: set[str] = set()
            for m in mix.members:
                try:
                    labels.update(Dataset(m.root).tasks.labels)
                except LrtoolError:
                    pass
            for kind in opts.loaders:
                try:
                    rep.runs.append(_run(kind, mix, opts, mon, labels, names))
                except Exception as exc:  # this loader failed; the others still run
                    rep.runs.append(LoaderRun(kind, error=loader_error_line(exc), peak_rss_bytes=mon.section_peak))
                    del exc
            mix_nv = MixtureDataset(path, tolerance_s=opts.tolerance_s, cache_dir=opts.cache_dir, decode_video=False)
            rep.checks.extend(_epoch_and_order_checks(mix_nv, opts, names))
            order = _make("map", mix, opts)
            drawn = np.bincount(mix.locate(_plan("map", order, opts.batches * opts.batch_size))[0],
                                minlength=len(names))
            rep.datasets = _per_dataset(mix, opts, names, drawn)
        except KeyboardInterrupt:
            raise
        except Exception as exc:
            rep.error = loader_error_line(exc)
    rep.peak_rss_bytes, rep.peak_pss_bytes = mon.peak, mon.peak_pss
    rep.warnings = list(dict.fromkeys(str(w.message) for w in caught if w.category.__name__ == "LoaderWarning"))
    rep.seconds = time.perf_counter() - t0
    return rep


def is_mixture_target(arg: str) -> bool:
    """True when ``arg`` names a mixture file (an existing regular file)."""
    return Path(arg).expanduser().is_file()


# ---------------------------------------------------------------------- reports
def render_mixture_text(rep: MixtureSmokeReport, out: IO[str], *, color: bool = False) -> None:
    """Text report of a mixture smoke run (validate's report first when it blocks)."""
    from lerobot_tools.report import render_text as render_validate

    if rep.blocked:
        render_validate(rep.validate, out, color=color)
        ids = ", ".join(sorted({f.check for _, f in rep.blocked}))
        out.write(f"\nsmoke: {rep.target}: not run: validate found errors that break loading the mixture ({ids})\n")
        out.write(f"Smoke: mixture of {len(rep.validate)} dataset(s): blocked by validate\n")
        return
    out.write(f"{rep.target} (mixture)\n")
    if rep.frames is not None:
        out.write(f"  {len(rep.datasets) or len(rep.validate)} dataset(s), {rep.frames} frame(s); built in "
                  f"{fmt(rep.construct_s, ' s', 2)} ({rep.cold_datasets} Arrow cache(s) built); common keys: "
                  f"{', '.join(rep.names)}\n")
    notes = Counter(f"{f.check} ({f.severity})" for r in rep.validate for f in r.findings
                    if not f.known and f.severity != "info")
    if notes:
        out.write(f"  validate: not blocking: {', '.join(f'{k} x{v}' if v > 1 else k for k, v in notes.items())}\n")
    for w in rep.warnings:
        out.write(f"  warning: {w}\n")
    render_runs(rep.runs, rep.checks, out)
    if rep.datasets:
        out.write(f"  per dataset (one batch each, in this process):\n    {'dataset':<40} {'weight':>7} {'drawn':>6} "
                  f"{'samples/s':>10} {'frames/s':>9}\n")
        for d in rep.datasets:
            name = d["dataset"] if len(d["dataset"]) <= 40 else "..." + d["dataset"][-37:]
            if d.get("error"):
                out.write(f"    {name:<40} FAIL {d['error']}\n")
            else:
                out.write(f"    {name:<40} {d['weight']:>7.3f} {d['drawn']:>6} {d['samples_per_s']:>10.1f} "
                          f"{d['decoded_frames_per_s']:>9.1f}\n")
    if rep.error:
        out.write(f"  FAIL  loader error: {rep.error}\n")
    out.write(f"  peak RSS of the process tree: {mb(rep.peak_rss_bytes)} (PSS {mb(rep.peak_pss_bytes)}, shared "
              f"pages counted once); {rep.seconds:.1f} s\n\n")
    out.write(f"Smoke: mixture of {len(rep.validate)} dataset(s): {'FAILED' if rep.failed else 'passed'}\n")


@dataclass
class MixtureSmokeRun:
    """The result of ``lrtool smoke MIXTURE`` in the commands' result protocol (``to_dict``, ``exit_status``,
    ``render_text``), as :class:`~lerobot_tools.smoke.model.SmokeRun` is for datasets."""

    report: MixtureSmokeReport

    @property
    def exit_status(self) -> int:
        """1 when validate blocked the run or any check or loader failed, else 0."""
        return 1 if self.report.failed else 0

    def to_dict(self) -> dict[str, Any]:
        """The JSON document (docs/output.md): ``datasets`` (validate's report of each dataset), ``summary``,
        ``exit_status``, and ``mixture`` (the loaders' report of the whole mixture; its ``datasets`` are the
        per-dataset measurements)."""
        from lerobot_tools.exitcodes import document

        rep = self.report
        mixture = {k: v for k, v in rep.to_dict().items() if k != "validate"}
        return document("smoke", [r.to_dict() for r in rep.validate],
                        {"datasets": len(rep.validate), "failed": int(rep.failed), "blocked": int(bool(rep.blocked))},
                        self.exit_status, mixture=mixture)

    def render_text(self, out: IO[str], *, color: bool = False) -> None:
        render_mixture_text(self.report, out, color=color)
