"""Phase 1 of diagnose-decode (worker processes, PyAV only, no torch): resolve each target, check every
referenced video file, read decoder headers and compare them with ``meta/info.json``."""

from __future__ import annotations

import time

from lerobot_tools.checks.catalogue import get as catalogue_entry
from lerobot_tools.dataset.ondisk import video_files_from_layout
from lerobot_tools.dataset.placeholders import (
    FILE_KIND_LABELS, PLACEHOLDER_CHECKS, UnreadableFileError, describe, file_kind_of, folder_of, shared_causes,
)
from lerobot_tools.dataset.subset import EpisodeSubset, files_read
from lerobot_tools.dataset.targets import Target
from lerobot_tools.diagnose.model import (
    ERROR,
    INFO,
    WARNING,
    DatasetDiagnosis,
    Mismatch,
    Problem,
    StreamProbe,
)
from lerobot_tools.errors import DatasetError
from lerobot_tools.findings import Finding, group_findings
from lerobot_tools.sniff import sniff
from lerobot_tools.video.compare import compare_header


def compare_with_info(feat: dict, info_fps: float | None, probe) -> list[Mismatch]:
    """Header facts of ``probe`` that disagree with the feature entry of ``info.json`` (and its ``fps``).

    The comparison is validate's F009 (:func:`lerobot_tools.video.compare.compare_header`: codec by canonical
    name, pix_fmt, the feature shape's height and width, ``fps`` within 1 %); facts the probe could not read
    are not compared. ``actual`` is shown as ``"480x640 (HxW)"`` for the shape and rounded to 3 decimals for fps.
    """
    out: list[Mismatch] = []
    for m in compare_header(feat, info_fps, probe):
        actual = m.actual
        if m.field == "shape":
            actual = f"{m.actual[0]}x{m.actual[1]} (HxW)"
        elif m.field == "fps":
            actual = round(m.actual, 3)
        out.append(Mismatch(m.field, m.declared, actual))
    return out


_PLACEHOLDER_GROUPS = {"F004": "Git LFS pointers", "F005": "error pages / text", "F006": "empty (0 bytes)"}


def _placeholder_action(check: str, fetch: str) -> str:
    """What to do about a placeholder video file (F004/F005/F006)."""
    if check == "F004":
        return f"fetch the real file: `git lfs pull` in the dataset repo, or re-download without excluding *.mp4 ({fetch})"
    if check == "F005":
        return "re-download: the server returned an error page (check the token and rate limits)"
    return "re-download the file"


def _defect(check: str, message: str, rel: str | None, group: str | None, action: str | None = None) -> Problem:
    """A file defect with the catalogue's ID, name and severity."""
    c = catalogue_entry(check)
    return Problem(c.severity, c.name, message, [rel] if rel else [], action=action, check=check, group=group)


def group_problems(problems: list[Problem]) -> list[Problem]:
    """Merge problems with the same check (or kind), severity and ``group`` the way validate merges findings
    (:func:`lerobot_tools.findings.group_findings`): one problem with the count, up to three example paths and,
    for several, the group's text with the count as message. Problems without a group pass unchanged."""
    proxies = [Finding(p.check or p.kind, p.severity, p.paths[0] if p.paths else None, p.message, group=p.group)
               for p in problems]
    original = {id(f): p for f, p in zip(proxies, problems)}
    first: dict[tuple, Problem] = {}
    for p in problems:
        first.setdefault((p.check or p.kind, p.severity, p.group), p)
    out = []
    for f in group_findings(proxies):
        if id(f) in original:
            out.append(original[id(f)])
            continue
        head = first[(f.check, f.severity, f.group)]
        out.append(Problem(f.severity, head.kind, f.message, f.paths, f.count, head.action, head.check, head.group))
    return out


#: validate checks whose errors diagnose-decode reports too: info.json itself (family I), the metadata that says
#: which video files exist and what they hold (unreadable episode metadata is reported where the files are listed).
METADATA_CHECKS = ("I",)


def _metadata_problems(ds, target: Target) -> list[Problem]:
    """validate's errors about info.json (:data:`METADATA_CHECKS`), as problems.

    A broken ``info.json`` (features null, fps not a frame rate, unknown ``codebase_version``, bad ``chunks_size``)
    makes every loader fail before it decodes a frame, so it is an error here as in ``lrtool validate``, with
    validate's check ID and message.
    """
    from lerobot_tools.checks import info
    from lerobot_tools.checks.context import CheckContext, StopChecks, ValidateOptions
    from lerobot_tools.checks.observer import FileObserver

    ctx = CheckContext(target, ValidateOptions(), FileObserver())
    ctx.dataset = ds
    try:
        info.run(ctx)
    except StopChecks:
        pass
    out = []
    for f in group_findings([f for f in ctx.findings if f.severity == ERROR and f.check.startswith(METADATA_CHECKS)]):
        out.append(Problem(ERROR, catalogue_entry(f.check).name, f.message,
                           f.paths or ([f.path] if f.path else []), f.count, check=f.check,
                           action="run `lrtool validate` on the dataset (and `lrtool repair` where it is repairable): "
                                  "loaders fail on this metadata before decoding a frame"))
    return out


def _unreadable_problem(exc: DatasetError, raw: list[Problem], placeholders: dict, fetch: str) -> None:
    """A metadata file that cannot be read, as validate reports it: a placeholder by F004/F005/F006 naming what
    it is, anything else by C007 (the episode metadata) or I002 (info.json)."""
    rel = exc.path or ""
    label = FILE_KIND_LABELS.get(file_kind_of(rel), "file")
    if isinstance(exc, UnreadableFileError) and exc.placeholder:
        placeholders[rel] = exc.sniffed
        action = (f"fetch the real file: `git lfs pull` in the dataset repo, or re-download it ({fetch})"
                  if exc.check == "F004" else _placeholder_action(exc.check, fetch))
        raw.append(_defect(exc.check, f"{label} {describe(exc.sniffed)}", rel,
                           f"{label}s under {folder_of(rel)}/ are {_PLACEHOLDER_GROUPS[exc.check]}", action=action))
    else:
        check = "I002" if rel == "meta/info.json" else "C007"
        msg = f"{label} {exc.message}" if exc.message.startswith("is ") else exc.message
        raw.append(_defect(check, msg, rel or None, None, action=f"restore the file (re-download it: {fetch})"))


def _files_for(ds, target: Target, notes: list[str], raw: list[Problem], placeholders: dict,
               fetch: str) -> list[tuple[str, str]] | None:
    """``(video_key, relpath)`` of the referenced video files, honouring a mixture's episode subset.

    When the episode metadata is unreadable, it is reported (as validate does) and the files come from
    ``video_path`` and the folders on disk (:func:`lerobot_tools.dataset.ondisk.video_files_from_layout`);
    returns None when even that fails (the problem is recorded)."""
    sub = EpisodeSubset.of(target)
    try:
        read = files_read(ds, sub, data=False)
    except DatasetError as exc:
        if exc.path and (exc.path.startswith("meta/episodes") or isinstance(exc, UnreadableFileError)):
            _unreadable_problem(exc, raw, placeholders, fetch)
            for other in ds.unreadable_episode_files():  # v3.0: every bad file, not only the first
                if other.path != exc.path:
                    _unreadable_problem(other, raw, placeholders, fetch)
        try:
            layout = video_files_from_layout(ds)
        except DatasetError as exc2:
            raw.append(_defect("I008", f"the video files cannot be found: {exc2}", None, None))
            return None
        notes.append(f"the episode metadata is unreadable: video files taken from {layout.source}")
        return [(vf.video_key, vf.relpath) for vf in layout.files]
    if not sub.whole:
        total = len(read.videos) + len(read.videos_unread)
        notes.append(f"episode subset from the mixture ({sub.describe()}): {len(read.videos)} of {total} video files")
    return [(vf.video_key, vf.relpath) for vf in read.videos]


def _relocate_missing(ds, files: list[tuple[str, str]], raw: list[Problem]) -> list[Problem]:
    """Missing videos found under a neighbouring layout (validate's search,
    :func:`lerobot_tools.dataset.relocate.locate_missing`) become one F002 problem saying where and how many."""
    from lerobot_tools.dataset.relocate import expected_from_paths, locate_missing

    missing = [p for p in raw if p.check == "F002" and p.paths]
    template = ds.video_path
    if not missing or not isinstance(template, str) or ds.layout is None:
        return raw
    expected = expected_from_paths(template, [rel for _, rel in files])
    wanted = expected_from_paths(template, [p.paths[0] for p in missing])
    if len(wanted) != len(missing):
        return raw
    reloc = locate_missing(ds.root, template, ds.layout, "video", expected, wanted)
    if not reloc.layouts:
        return raw
    action = ("`lrtool repair --move-files` moves the files found to where video_path points (`lrtool repair` "
              "points video_path at their layout when one template fits); re-download the rest")
    c = catalogue_entry("F002")
    merged = Problem(c.severity, c.name, reloc.message("video_path"), [p.paths[0] for p in missing[:3]], len(missing),
                     action, "F002", None)
    return [p for p in raw if p not in missing] + [merged]


def declared_probe(rel: str, feat: dict, fps: float | None):
    """A :class:`~lerobot_tools.video.probe.VideoProbe` from a camera's ``info.json`` declaration (``features[key]
    ["info"]``: ``video.codec``, ``video.pix_fmt``, ``video.height``, ``video.width``, lerobot's
    ``get_video_info``), for a video not downloaded yet; its ``warnings`` say where the facts come from."""
    from lerobot_tools.video.codecs import canonical_codec
    from lerobot_tools.video.probe import VideoProbe, chroma_of

    info = feat.get("info") if isinstance(feat.get("info"), dict) else {}
    pix = info.get("video.pix_fmt") if isinstance(info.get("video.pix_fmt"), str) else None
    try:
        depth, chroma = chroma_of(pix) if pix else (None, None)
    except Exception:  # PyAV missing: the format's depth and chroma stay unknown
        depth, chroma = None, None

    def num(k):
        v = info.get(k)
        return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    codec = info.get("video.codec") if isinstance(info.get("video.codec"), str) else None
    return VideoProbe(rel, status="ok", codec=canonical_codec(codec) if codec else None, pix_fmt=pix, bit_depth=depth,
                      chroma=chroma, width=num("video.width"), height=num("video.height"),
                      fps=float(info.get("video.fps") or fps or 0) or None,
                      warnings=["declared in meta/info.json: the file is not downloaded yet"])


def _probe_file(rel: str, path, *, pyav: bool, gop: str, sniffed=None):
    from lerobot_tools.video.probe import probe_video

    return probe_video(path, pyav=pyav, gop=gop, sniffed=sniffed)


def probe_target(target: Target, all_files: bool = False, *, probe_file=None) -> DatasetDiagnosis:
    """Phase 1 for one target: resolve, list video files, check every file, read headers, compare with info.json.

    Never raises for bad data: an unresolved target, a missing ``info.json`` or bad files become problems.
    Uses PyAV (when importable) and pure-Python layers only; does not import torch.

    Args:
        target: a resolved target.
        all_files: read the decoder header of every file (default: the first healthy file per video key).
        probe_file: ``probe_file(relpath, path, pyav=, gop=, sniffed=)`` returning the file's
            :class:`~lerobot_tools.video.probe.VideoProbe` (default: :func:`~lerobot_tools.video.probe.probe_video`;
            the distributed job records and replays these reads).
    """
    from lerobot_tools.video.probe import pyav_available

    probe_file = probe_file or _probe_file

    t0 = time.perf_counter()
    dd = DatasetDiagnosis(target=target.spec, source=target.source,
                          root=str(target.root) if target.root else None)
    dd.notes.extend(target.notes)
    if target.error:
        dd.error = target.error
        dd.problems.append(_defect(target.error_check, f"cannot diagnose: {target.error}", None, None))
        return dd
    fetch = (f"`lrtool prefetch {target.repo_id}`" if target.repo_id
             else "e.g. `hf download REPO_ID --repo-type dataset --local-dir DATASET_FOLDER`")
    placeholders: dict = {}  # relpath -> sniff of every placeholder seen, for the causes said once
    raw: list[Problem] = []  # grouped at the end
    ds = _open_dataset(target, dd, raw, placeholders, fetch)
    if ds is None:
        return dd
    keys = dd.video_keys
    dd.problems.extend(_metadata_problems(ds, target))
    if not keys:
        dd.notes.append("no video features in info.json: nothing to decode")
        return dd
    files = _files_for(ds, target, dd.notes, raw, placeholders, fetch)
    if files is None:
        dd.problems.extend(group_problems(raw))
        return dd
    use_pyav = pyav_available()
    if not use_pyav:
        dd.notes.append("PyAV is not importable: headers come from the MP4 boxes only (no pix_fmt)")
    from lerobot_tools.dataset.downloads import read_state

    download = read_state(ds.root)  # a --meta-only copy: absent videos are not downloaded yet, never missing
    pending, light = _check_files(ds, dd, files, raw, placeholders, fetch, download,
                                  lambda key, rel, path, sn, header: probe_file(
                                      rel, path, pyav=use_pyav and header, gop="demux" if use_pyav and header
                                      else "header", sniffed=sn), all_files)
    raw = _relocate_missing(ds, files, raw)
    dd.problems.extend(group_problems(raw))
    dd.causes = shared_causes(placeholders)
    _keys_without_files(ds, dd, keys, fetch)
    if pending:
        dd.notes.append(f"{pending} video file(s) not downloaded yet ({download.describe()}): their streams are judged "
                        "by what meta/info.json declares (codec, pix_fmt, size), without a decode test")
    if light:
        dd.notes.append(f"decoder headers read for the first healthy file of each video feature ({len(dd.streams)} "
                        f"of {len(dd.streams) + light} healthy files; the others were checked for presence and "
                        "integrity only); use --all-files to read every header")
    dd.seconds = time.perf_counter() - t0
    return dd


def _open_dataset(target: Target, dd: DatasetDiagnosis, raw: list, placeholders: dict, fetch: str):
    """The target's :class:`Dataset` (``dd.codebase_version`` and ``dd.video_keys`` set), or None when it cannot
    be read: ``dd`` then says why (for a placeholder info.json, with the placeholder videos beside it)."""
    from lerobot_tools.dataset.model import Dataset, files_under

    try:
        ds = Dataset(target.root)
        dd.codebase_version = ds.codebase_version
        keys = ds.video_keys
    except UnreadableFileError as exc:
        dd.error = str(exc)
        _unreadable_problem(exc, raw, placeholders, fetch)
        if exc.placeholder:  # the videos of such a download are most likely placeholders too: name them
            root = target.root
            for rel in files_under(root, "videos", ".mp4"):
                sn = sniff(root / rel)
                check = PLACEHOLDER_CHECKS.get(sn.kind)
                if check:
                    placeholders[rel] = sn
                    raw.append(_defect(check, f"video file {describe(sn)}", rel,
                                       f"video files under {folder_of(rel)}/ are {_PLACEHOLDER_GROUPS[check]}",
                                       action=_placeholder_action(check, fetch)))
        dd.problems.extend(group_problems(raw))
        dd.causes = shared_causes(placeholders)
        return None
    except DatasetError as exc:
        dd.error = str(exc)
        dd.problems.append(Problem(ERROR, "target", f"cannot diagnose: {exc}"))
        return None
    dd.video_keys = keys
    return ds


def _check_files(ds, dd: DatasetDiagnosis, files: list, raw: list, placeholders: dict, fetch: str, download,
                 probe, all_files: bool) -> tuple[int, int]:
    """Check every video file (presence, placeholders, integrity) and read the decoder header of the first healthy
    file per video key (of every file with ``all_files``) through ``probe(key, rel, path, sniffed, header)``,
    comparing it with info.json (F009). Returns ``(pending, light)``: the files a --meta-only copy has not
    downloaded, and the healthy files checked without their header."""
    info_fps = ds.fps
    features = ds.features
    headed: set[str] = set()
    light = 0  # healthy files checked without reading their decoder header
    episodes_of = {vf.relpath: vf.episodes for vf in ds.video_files()} if download is not None else {}
    pending = 0
    for key, rel in files:
        dd.files_per_key[key] = dd.files_per_key.get(key, 0) + 1
        try:
            path = ds.path(rel)
        except DatasetError as exc:
            raw.append(_defect("I008", f"video path leaves the dataset folder: {exc.message}", rel,
                               "video paths leave the dataset folder"))
            continue
        sn = sniff(path)
        if sn.kind == "missing" and download is not None and not download.downloaded(episodes_of.get(rel, [])):
            pending += 1
            if key not in headed:  # judge the stream by what info.json declares until the file is downloaded
                headed.add(key)
                dd.streams.append(StreamProbe(key, rel, declared_probe(rel, features.get(key, {}), info_fps)))
            continue
        if sn.kind == "missing":
            raw.append(_defect("F002", f"{key}: video file is missing", rel, f"video files of {key} are missing",
                               action=f"re-download the dataset's videos ({fetch})"))
            continue
        placeholder = PLACEHOLDER_CHECKS.get(sn.kind)
        if placeholder:
            placeholders[rel] = sn
            raw.append(_defect(placeholder, f"{key}: video file {describe(sn)}", rel,
                               f"{key}: video files under {folder_of(rel)}/ are {_PLACEHOLDER_GROUPS[placeholder]}",
                               action=_placeholder_action(placeholder, fetch)))
            continue
        want_header = all_files or key not in headed
        pr = probe(key, rel, path, sn, want_header)
        if pr.status != "ok":
            raw.append(_defect("F008", f"{key}: {pr.problem}", rel, f"{key}: video files cannot be read",
                               action="re-download this file (a partial download or a corrupt copy)"))
            continue
        for w in pr.warnings:
            sev = WARNING if w.startswith("truncated") else INFO
            kind = "fragmented" if w.startswith("fragmented") else "probe-warning"
            raw.append(Problem(sev, kind, f"{key}: {w}", [rel], group=f"{key}: {w.split(':')[0]}"))
        if not want_header:
            light += 1
            continue
        headed.add(key)
        sp = StreamProbe(key, rel, pr, compare_with_info(features.get(key, {}), info_fps, pr))
        dd.streams.append(sp)
        for m in sp.mismatches:
            raw.append(_defect("F009", f"{key}: {m.message}", rel, f"{key}: {m.message}",
                               action=f"trust the file: correct features[\"{key}\"] in meta/info.json (tools and "
                                      "loaders that read info.json are misled)"))
    return pending, light


def _keys_without_files(ds, dd: DatasetDiagnosis, keys: list[str], fetch: str) -> None:
    """A video key with no file: nothing referenced (0 episodes, or the metadata says none), or an error when the
    episode metadata is unreadable and no file on disk fits video_path."""
    for key in keys:
        if key in dd.files_per_key:
            continue
        if ds.total("total_episodes") == 0:
            # no episode, so no video file is referenced: nothing is missing (validate agrees: no F002)
            dd.notes.append(f"{key}: info.json total_episodes is 0, so no episode references a video file")
        elif any(n.startswith("the episode metadata is unreadable") for n in dd.notes):
            # nothing can be decoded for this camera: an error, never "nothing to decode"
            dd.problems.append(_defect("F002", f"{key}: no video file found (the episode metadata is unreadable "
                                       "and no file on disk fits video_path)", None, None,
                                       action=f"re-download the dataset's videos ({fetch})"))
        else:
            dd.notes.append(f"{key}: no video file is referenced by the episode metadata")


def _probe_one(args: tuple[Target, bool]) -> DatasetDiagnosis:
    target, all_files = args
    try:
        return probe_target(target, all_files)
    except Exception as exc:  # a bug must not take down the other 399 datasets of a mixture
        dd = DatasetDiagnosis(target=target.spec, source=target.source,
                              root=str(target.root) if target.root else None)
        dd.error = f"lrtool failed on this dataset ({type(exc).__name__}: {exc}); please report it"
        dd.problems.append(Problem(ERROR, "target", dd.error))
        return dd


def probe_targets(targets: list[Target], all_files: bool = False, jobs: int = 1,
                  progress: bool | None = None) -> list[DatasetDiagnosis]:
    """Phase 1 over many targets, in order, in ``jobs`` worker processes (0 = one per CPU; 1 = in-process).

    Workers are forked (where available) before torch is imported by the later phases.
    """
    from lerobot_tools._parallel import map_ordered

    return map_ordered(_probe_one, [(t, all_files) for t in targets], jobs=jobs, desc="probe", progress=progress)
