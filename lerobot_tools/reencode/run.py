"""Re-encoding datasets: targets -> video files -> worker processes, each file encoded, verified and swapped in;
``info.json`` updated per camera once all its files are done (:func:`reencode`, :func:`reencode_resolved`).

Per dataset (single process): the write lock (:func:`lerobot_tools._lock.dataset_lock`) is held for the whole run;
temporary files a killed run left are removed; every referenced video is probed (header only) and planned:
**skipped** when it already is the target codec and pixel format (a re-run resumes where a killed one stopped) or,
with ``--only-undecodable --gpu MODEL``, when that GPU's NVDEC decodes it (diagnose-decode's table,
:func:`lerobot_tools.video.nvdec.verdict`); otherwise **re-encoded** in a worker: encoded to a temporary file beside
the original (:func:`lerobot_tools.reencode.transcode.encode_file`), verified (same frame count, every frame time
within 1 µs, every frame decodes, sampled frames above the PSNR floor), then swapped in
(:func:`lerobot_tools.reencode.backup.swap_in`: the original moved into ``.lrtool/reencode/``). A file that fails
any step is left untouched and reported. Killed at any moment, each file is its original or its verified new
version; the next run removes the temporary file and re-encodes what is left.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from lerobot_tools import _io
from lerobot_tools._contain import refuse_escaping_symlinks
from lerobot_tools._lock import dataset_lock
from lerobot_tools._parallel import map_ordered
from lerobot_tools.errors import DatasetError, LrtoolError, one_line
from lerobot_tools.reencode.model import DatasetResult, FileResult, ReencodeOptions, ReencodeRun
from lerobot_tools.reencode.settings import EncoderSettings, choose_encoder, gop_for, pixel_format, settings_for

#: frames of the first planned file encoded and verified by a dry run to measure the speed
SAMPLE_FRAMES = 120


@dataclass
class Work:
    """One file to re-encode (picklable: it goes to a worker process)."""

    index: int  # dataset position in the run
    root: str
    relpath: str
    video_key: str
    frames: int
    settings: EncoderSettings
    codec_before: str | None
    pix_fmt_before: str | None
    run_dir: str | None
    psnr_floor: float


def writable_file(root: Path, rel: str) -> Path:
    """The path of video ``rel`` for writing: a regular file inside the dataset, reached without a symlink.

    The one call every writer of reencode makes before touching a video (the place for a shared "refuse symlinks
    out of the dataset" rule); every other path it writes goes through
    :func:`lerobot_tools.reencode.backup.owned_path`.

    Raises:
        LrtoolError: a symlink, or a path that resolves outside the dataset.
    """
    from lerobot_tools.reencode.backup import owned_path

    path = Path(root) / rel
    if path.is_symlink():
        raise LrtoolError("a symlink: reencode replaces regular files inside the dataset only", rel)
    return owned_path(root, rel)


def reencode_one(w: Work, tick=None) -> FileResult:
    """Encode, verify and swap in one file; never raises for a bad file (its result says why)."""
    from lerobot_tools.reencode import backup
    from lerobot_tools.reencode.transcode import VerifyError, encode_file, source_times, verify_file

    root = Path(w.root)
    res = FileResult(w.relpath, w.video_key, "failed", frames=w.frames, codec_before=w.codec_before,
                     pix_fmt_before=w.pix_fmt_before, codec_after=w.settings.codec, pix_fmt_after=w.settings.pix_fmt)
    t0 = time.perf_counter()
    tmp = None
    try:
        path = writable_file(root, w.relpath)
        if w.run_dir:  # where its original will be kept: refused before any work, not after the encode
            backup.owned_path(root, (Path(w.run_dir) / "files" / w.relpath).relative_to(root).as_posix())
        res.bytes_before = path.stat().st_size
        for stale in path.parent.glob(f"{_io.TMP_PREFIX}*-{path.name}"):  # a killed run's temporary file
            stale.unlink()
        src = source_times(path)
        tmp = path.parent / f"{_io.TMP_PREFIX}{secrets.token_hex(4)}-{path.name}"
        enc = encode_file(path, tmp, w.settings, count=src.count, tick=tick)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        v = verify_file(tmp, src, enc.samples, psnr_floor=w.psnr_floor)
        res.max_pts_diff, res.min_psnr = v.max_pts_diff, (v.min_psnr if v.min_psnr != float("inf") else None)
        res.bytes_after = tmp.stat().st_size
        res.backup = backup.swap_in(root, w.relpath, tmp, Path(w.run_dir) if w.run_dir else None)
        tmp = None
        res.status, res.frames = "reencoded", v.frames
    except VerifyError as exc:
        res.reason = f"the new file does not verify, the original is kept: {exc}"
    except LrtoolError as exc:
        res.reason = str(exc) if not exc.path else exc.message
    except Exception as exc:  # av.error.FFmpegError, OSError (disk full, read-only folder) ...
        res.reason = f"{one_line(exc, typed=True)}; the original is kept"
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                tmp.unlink()
    res.seconds = time.perf_counter() - t0
    return res


def _worker_failed(w: Work, exc: BaseException) -> FileResult:
    return FileResult(w.relpath, w.video_key, "failed", reason=f"worker process failed ({one_line(exc, typed=True)}); "
                      "the original is kept", frames=w.frames)


def _verdict_skip(probe, gpu) -> str | None:
    """Why ``--only-undecodable`` leaves a stream alone (NVDEC on ``gpu`` decodes it), or None."""
    from lerobot_tools.video.nvdec import YES, verdict

    v = verdict(gpu, probe.codec, probe.chroma, probe.bit_depth, probe.width, probe.height, probe.profile)
    return f"NVDEC on {gpu.label} decodes it" if v.decodable == YES else None


def plan_dataset(target, options: ReencodeOptions, encoder: str, gpu, index: int, locks: contextlib.ExitStack | None,
                 run_dir: Path | None, *, only: set[str] | None = None,
                 clean: bool = True) -> tuple[DatasetResult, list[Work]]:
    """Open one target, take its lock (not on a dry run), remove stale temporary files, probe and plan its videos.

    Args:
        only: re-encode only these video files (a distributed task's share); the others are not probed.
        clean: remove every stale temporary file under ``videos/`` (False: each file's own, by its worker).
    """
    from lerobot_tools.dataset.model import Dataset
    from lerobot_tools.video.probe import probe_video

    dres = DatasetResult(target=target.spec, root=str(target.root) if target.root else None)
    if target.error:
        dres.error = target.error
        return dres, []
    if target.origin == "hub-cache":
        dres.error = ("refusing to re-encode inside a huggingface_hub snapshot cache (its files are shared blobs); "
                      "copy the dataset out and re-encode the copy")
        return dres, []
    root = Path(target.root)
    try:
        refuse_escaping_symlinks(root, "re-encode")  # before the lock creates .lrtool/ (dry run too), as reshard
        if locks is not None and not options.dry_run:
            locks.enter_context(dataset_lock(root, timeout=options.lock_timeout, what="re-encoding"))
        ds = Dataset(root)
        dres.codebase_version = ds.codebase_version
        files = ds.video_files()
    except LrtoolError as exc:
        dres.error = exc.within(root)
        return dres, []
    if not files:
        dres.notes.append("no video files")
        return dres, []
    if clean:
        from lerobot_tools.reencode.backup import owned_path

        try:  # a videos/ symlinked elsewhere is not swept: the temporary files there are not this dataset's
            videos = owned_path(root, "videos")
        except LrtoolError as exc:
            videos = None
            dres.notes.append(f"temporary files not removed: {exc.message}")
        stale = _io.clean_stale_temps(videos, dry_run=options.dry_run) if videos and videos.is_dir() else []
        if stale:
            dres.notes.append(f"{'would remove' if options.dry_run else 'removed'} {len(stale)} temporary file(s) of "
                              "an interrupted run")
    work = []
    for vf in files:
        if only is not None and vf.relpath not in only:
            continue
        try:
            path = ds.path(vf.relpath)
        except DatasetError as exc:
            dres.files.append(FileResult(vf.relpath, vf.video_key, "failed", reason=exc.message))
            continue
        p = probe_video(path, pyav=True)
        fr = FileResult(vf.relpath, vf.video_key, "skipped", frames=p.frame_count or 0, codec_before=p.codec,
                        pix_fmt_before=p.pix_fmt, bytes_before=p.size or 0)
        if not p.ok:
            fr.status, fr.reason = "failed", f"cannot be read ({p.problem})"
            dres.files.append(fr)
            continue
        pix = pixel_format(options.codec, options.pix_fmt, p.bit_depth)
        if p.codec == options.codec and p.pix_fmt == pix:
            fr.reason = f"already {options.codec} {pix}"
            dres.files.append(fr)
            continue
        if options.only_undecodable and gpu is not None:
            why = _verdict_skip(p, gpu)
            if why:
                fr.reason = why
                dres.files.append(fr)
                continue
        settings = settings_for(options.codec, encoder=encoder, pix_fmt=pix, gop=gop_for(p.gop_max, options.gop),
                                crf=options.crf, preset=options.preset, device=options.device)
        fr.status, fr.codec_after, fr.pix_fmt_after = "planned", options.codec, pix
        dres.files.append(fr)
        work.append(Work(index, str(root), vf.relpath, vf.video_key, p.frame_count or 0, settings, p.codec, p.pix_fmt,
                         str(run_dir) if (run_dir and options.keep_originals) else None, options.psnr_floor))
    return dres, work


def update_info(root: Path, options: ReencodeOptions, run_dir: Path | None) -> list[str]:
    """Set ``video.codec``/``video.pix_fmt`` (and ``video.g``, ``video.crf``, ``video.preset`` when present) of each
    camera whose every referenced file now is the target codec, pixel format and keyframe interval: once per camera,
    idempotent, under a short lock of its own (tasks of a distributed run may finish cameras at once). Returns the
    cameras updated now.

    Raises:
        LrtoolError, OSError: info.json cannot be read or written (its original is then untouched).
    """
    import filelock

    from lerobot_tools.reencode.backup import owned_path

    lock_dir = owned_path(root, ".lrtool")
    lock_dir.mkdir(exist_ok=True)
    lock_path = lock_dir / "reencode-info.lock"
    with filelock.FileLock(str(lock_path), timeout=options.lock_timeout):
        try:
            return _update_info_locked(root, options, run_dir)
        finally:
            with contextlib.suppress(OSError):
                lock_path.unlink()  # while held: a waiter that then wins the unlinked file retries (filelock)
            with contextlib.suppress(OSError):
                lock_dir.rmdir()  # only when empty


def _update_info_locked(root: Path, options: ReencodeOptions, run_dir: Path | None) -> list[str]:
    import copy
    import json

    from lerobot_tools.dataset.model import Dataset
    from lerobot_tools.repair.model import dump_like
    from lerobot_tools.repair.plan import keys_preserved
    from lerobot_tools.video.compare import declared_video_info
    from lerobot_tools.video.probe import probe_video

    ds = Dataset(root)
    info = ds.info
    new = copy.deepcopy(info)
    done = []
    for key in ds.video_keys:
        probes = [probe_video(ds.path(vf.relpath), pyav=True) for vf in ds.video_files() if vf.video_key == key]
        if not probes or not all(p.ok for p in probes):
            continue
        formats = {(p.codec, p.pix_fmt) for p in probes}
        if len(formats) != 1:
            continue
        codec, pix = formats.pop()
        if codec != options.codec:
            continue
        vinfo = declared_video_info(new["features"][key])
        before = dict(vinfo)
        vinfo["video.codec"], vinfo["video.pix_fmt"] = codec, pix
        gops = {p.gop_max for p in probes if p.gop_max}
        if "video.g" in vinfo and len(gops) == 1:
            vinfo["video.g"] = gops.pop()
        if "video.crf" in vinfo and options.crf is not None:
            vinfo["video.crf"] = options.crf
        if vinfo != before:
            done.append(key)
    if not done:
        return []
    from lerobot_tools.reencode.backup import owned_path, save_info

    path = owned_path(root, "meta/info.json")
    old_text = _io.read_text_capped(path, "meta/info.json")
    text = dump_like(old_text, new)
    keys_preserved(info, json.loads(text))
    if run_dir is not None and not options.dry_run:
        save_info(root, run_dir, old_text, text)
    if not options.dry_run:
        def verify(tmp: Path) -> None:  # the exact text, and the JSON the plan made
            data = tmp.read_bytes()
            if data != text.encode("utf-8") or json.loads(data) != json.loads(text):
                raise ValueError("meta/info.json does not read back as planned")

        with _io.atomic_path(path, verify=verify) as tmp:
            tmp.write_text(text, encoding="utf-8")
    return done


def _measure(work: list[Work]) -> float | None:
    """Frames/s of encode + verify on a sample of the first planned file (a dry run's estimate)."""
    import tempfile

    from lerobot_tools.reencode.transcode import encode_file, source_times

    if not work:
        return None
    w = work[0]
    path = Path(w.root) / w.relpath
    with tempfile.TemporaryDirectory(prefix="lrtool-reencode-sample-") as d:
        out = Path(d) / "sample.mp4"
        t0 = time.perf_counter()
        try:
            src = source_times(path)
            enc = encode_file(path, out, w.settings, count=src.count, limit=SAMPLE_FRAMES)
            import av

            with av.open(str(out)) as c:  # the verification decodes every frame again
                for _ in c.decode(c.streams.video[0]):
                    pass
        except Exception:
            return None
        dt = time.perf_counter() - t0
    return enc.frames / dt if dt > 0 and enc.frames else None


def reencode_resolved(targets: list, options: ReencodeOptions | None = None, *, jobs: int = 1,
                      progress: bool | None = None) -> ReencodeRun:
    """Re-encode resolved targets (:func:`lerobot_tools.dataset.resolve_targets`); see the module docstring.

    Args:
        targets: resolved targets; unresolved ones are reported with their error.
        options: :class:`ReencodeOptions`.
        jobs: files re-encoded at once, each in a worker process (1: here; 0: one per CPU).
        progress: a progress bar on stderr counting frames (frames/s and ETA); None: only on a terminal.

    Returns:
        A :class:`ReencodeRun` (never raises for a bad dataset or file).

    With ``device="cuda"`` the NVENC encoder is opened once first; where it cannot (no GPU, or an A100 / H100, which
    have no NVENC), the CPU encoder is used and the run's notes say why.

    Raises:
        UsageError: bad options, or PyAV has no encoder for the codec at all.
    """
    options = options or ReencodeOptions()
    options.check()
    t0 = time.perf_counter()
    run = ReencodeRun(options=options)
    gpu = _gpu(options, run)
    options = pick_encoder(run)
    with contextlib.ExitStack() as locks:
        work: list[Work] = []
        seen: dict[str, int] = {}
        run_dirs: dict[int, Path] = {}
        for target in targets:
            key = str(Path(target.root).resolve()) if target.root else None
            if key is not None and key in seen:
                run.datasets.append(DatasetResult(target=target.spec, root=str(target.root),
                                                  notes=[f"same dataset as {run.datasets[seen[key]].target}: "
                                                         "processed once"]))
                continue
            i = len(run.datasets)
            run_dir = None
            if target.root is not None and not target.error and options.keep_originals:
                from lerobot_tools.reencode.backup import new_run_dir

                run_dir = new_run_dir(Path(target.root))
                run_dirs[i] = run_dir
            dres, items = plan_dataset(target, options, run.encoder, gpu, i, locks, run_dir)
            if key is not None:
                seen[key] = i
            run.datasets.append(dres)
            work += items
        if options.dry_run:
            run.measured_fps = _measure(work)
            if run.measured_fps:
                run.estimate_s = sum(w.frames for w in work) / (run.measured_fps * max(1, jobs or os.cpu_count() or 1))
        else:
            results = map_ordered(reencode_one, work, jobs=jobs, desc="reencode", unit="frame", progress=progress,
                                  weight=lambda w: max(1, w.frames), inline=reencode_one,
                                  label=lambda w: w.relpath[-40:], on_worker_error=_worker_failed)
            for w, r in zip(work, results):
                d = run.datasets[w.index]
                d.files = [r if f.relpath == w.relpath else f for f in d.files]
            for i, d in enumerate(run.datasets):
                if d.root and not d.error and d.files:
                    try:
                        d.info_updated = update_info(Path(d.root), options, run_dirs.get(i))
                    except (LrtoolError, OSError, ValueError) as exc:
                        d.error = f"meta/info.json not updated: {one_line(exc)}"
                    tidy(run_dirs.get(i))
    run.seconds = time.perf_counter() - t0
    return run


def pick_encoder(run: ReencodeRun) -> ReencodeOptions:
    """Set ``run.encoder``: the codec's encoder for the device; for ``cuda``, NVENC opened once first, and where it
    cannot open (no GPU; an A100 or H100, which have no NVENC) the CPU encoder, with a note saying why. Returns the
    options the files are encoded with (``device`` then ``cpu``).

    Raises:
        UsageError: PyAV has no encoder for the codec at all.
    """
    options = run.options
    run.encoder = choose_encoder(options.codec, options.device)
    if run.encoder.endswith("_nvenc"):
        from lerobot_tools.errors import UsageError
        from lerobot_tools.reencode.nvenc import check_nvenc

        try:
            check_nvenc(run.encoder, options.device)
        except UsageError as exc:
            options = dataclasses.replace(options, device="cpu")
            run.options = options
            run.encoder = choose_encoder(options.codec, "cpu")
            run.notes.append(f"{exc}; encoding on the CPU with {run.encoder} instead")
    return options


def tidy(run_dir: Path | None) -> None:
    """Remove a run folder that kept nothing (every file skipped or failed)."""
    if run_dir is None or not run_dir.is_dir():
        return
    from lerobot_tools.reencode.backup import prune

    prune(run_dir)
    with contextlib.suppress(OSError):
        run_dir.parent.rmdir()


def _gpu(options: ReencodeOptions, run: ReencodeRun):
    """The ``--gpu`` model, and the plan's note about its NVENC."""
    if not options.gpu:
        if options.device.startswith("cuda"):
            run.notes.append("NVENC encodes on the GPU; A100/A30 and H100/H200 have none (NVIDIA's Video Encode and "
                             "Decode GPU Support Matrix): use --device cpu there, or an NVENC GPU such as an L4")
        return None
    from lerobot_tools.reencode.settings import nvenc_note
    from lerobot_tools.video.nvdec import lookup_gpu

    gpu = lookup_gpu(options.gpu)
    note = nvenc_note(gpu)
    if note:
        run.notes.append(note)
    return gpu


def reencode(target_args: Iterable[str], options: ReencodeOptions | None = None, *, jobs: int = 1,
             progress: bool | None = None) -> ReencodeRun:
    """Resolve TARGET arguments (folders, repo ids in the local caches, mixture files) and re-encode.

    Raises:
        UsageError: bad options, an unreadable mixture file, an encoder that is not available.
    """
    from lerobot_tools.dataset.targets import resolve_targets

    options = options or ReencodeOptions()
    options.check()
    return reencode_resolved(resolve_targets(list(target_args)), options, jobs=jobs, progress=progress)
