"""Video fixes: F009 declarations taken from the probed streams, F002/F003 ``video_path`` pointed at the
neighbouring layout that holds the files (or the files moved with ``--move-files``).
"""

from __future__ import annotations

from typing import Any

from lerobot_tools.dataset import templates as tpl
from lerobot_tools.dataset.model import INFO_PATH, Dataset
from lerobot_tools.errors import DatasetError
from lerobot_tools.repair.fixes.context import RepairContext
from lerobot_tools.repair.model import Move
from lerobot_tools.sniff import sniff


# =========================================================================== F009 video declarations
def fix_video_declarations(rc: RepairContext) -> None:
    """F009: ``video.codec``, ``video.pix_fmt``, ``video.fps`` and the feature shape (and ``video.height`` /
    ``video.width``) follow the probed stream when every referenced file of that camera is readable and they
    all agree (lerobot writes these keys from episode 0's file only, pitfalls D7). A stream frame rate that
    differs from info.json ``fps`` is not repairable: changing fps would re-time every frame."""
    from lerobot_tools.video.compare import compare_header, declared_video_info, frame_rate_differs
    from lerobot_tools.video.probe import probe_video, pyav_available

    ds = rc.ds
    if not pyav_available():
        rc.cannot("F009", "PyAV is not installed, so the streams cannot be probed", "pip install av, then rerun")
        return
    try:
        files = ds.video_files()
    except DatasetError as exc:
        rc.cannot("F009", exc.message, "fix the episode metadata / video_path first")
        return
    info_fps = ds.fps
    for key in ds.video_keys:
        if not any(f.concerns({"video_key": key}) for f in rc.findings("F009")):
            continue
        subject = {"video_key": key}
        probes = []
        problem = None
        for vf in (v for v in files if v.video_key == key):
            p = probe_video(ds.path(vf.relpath), pyav=True)
            if not p.ok:
                problem = f"{vf.relpath} cannot be probed ({p.problem})"
                break
            probes.append(p)
        if problem or not probes:
            rc.cannot("F009", problem or f"no video file of {key} is referenced",
                      "restore the video files, then rerun", subject)
            continue
        streams = {(p.codec, p.pix_fmt, p.width, p.height) for p in probes}
        if len(streams) > 1:
            rc.cannot("F009", f"the video files of {key} are encoded differently ({len(streams)} kinds)",
                      "re-encode the odd files like the others (lerobot reads one declaration per camera)", subject)
            continue
        codec, pix_fmt, width, height = streams.pop()
        rates = [p.fps for p in probes if p.fps]
        feat = rc.feats.get(key)
        vinfo = declared_video_info(feat)  # the dict validate's F009 reads, edited in place
        mismatched = {m.field for m in compare_header(feat, info_fps, probes[0])}
        rate_ok = not any(frame_rate_differs(r, info_fps) for r in rates)
        if not rate_ok:
            rc.cannot("F009", f"{key} streams run at {rates[0]:.3f} fps but info.json fps is {info_fps:g}",
                      "re-encode the videos at the dataset fps (changing fps would re-time every frame)",
                      {"video_key": key, "key": "fps"})
        changes: list[tuple[str, str]] = []  # (what changes, info.json key: the F009 findings it fixes)
        if "video.codec" in mismatched:
            changes.append((f"video.codec {vinfo['video.codec']} -> {codec}", "video.codec"))
            vinfo["video.codec"] = codec
        if "video.pix_fmt" in mismatched:
            changes.append((f"video.pix_fmt {vinfo['video.pix_fmt']} -> {pix_fmt}", "video.pix_fmt"))
            vinfo["video.pix_fmt"] = pix_fmt
        if "shape" in mismatched:
            shape = feat["shape"]
            names = feat.get("names")
            chw = isinstance(names, list) and names[:1] == ["channels"]
            new_shape = [shape[0], height, width] if chw else [height, width, shape[2]]
            changes.append((f"shape {shape} -> {new_shape}", "shape"))
            feat["shape"] = new_shape
            for k, v in (("video.height", height), ("video.width", width)):
                if k in vinfo:
                    vinfo[k] = v
        if changes and rate_ok and rates and "video.fps" in vinfo:
            r = sum(rates) / len(rates)
            new_fps = int(round(r)) if abs(r - round(r)) < 0.01 else round(r, 3)
            if vinfo["video.fps"] != new_fps:
                changes.append((f"video.fps {vinfo['video.fps']} -> {new_fps}", "video.fps"))
                vinfo["video.fps"] = new_fps
        for text, info_key in changes:
            rc.repair("F009", f"{key}: {text} (probed in all {len(probes)} file(s))", [INFO_PATH],
                      {"video_key": key, "key": info_key})


# =========================================================================== F002/F003 video_path
#: Neighbouring video layouts recognised per layout (the defaults, the other camera/chunk nesting, and
#: the names of stale documentation, lerobot-format §2.2).
NEIGHBOUR_VIDEO_TEMPLATES = {
    "v2": [
        tpl.V2_VIDEO_PATH,
        "videos/{video_key}/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.mp4",
        "videos/{video_key}/episode_{episode_index:06d}.mp4",
    ],
    "v3": [
        tpl.V3_VIDEO_PATH,
        "videos/chunk-{chunk_index:03d}/{video_key}/file-{file_index:03d}.mp4",
        "videos/{video_key}/chunk-{chunk_index:03d}/file_{file_index:03d}.mp4",
        "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:04d}.mp4",
    ],
}


def _video_pairs(ds: Dataset, current: str, candidate: str) -> list[tuple[str, str]] | None:
    """(path under ``current``, path under ``candidate``) for every referenced video file, or None when a
    template cannot be expanded or leaves the root."""
    out: dict[str, str] = {}
    size = ds.chunks_size
    for ep in ds.episodes:
        for key in ds.video_keys:
            values: dict[str, Any] = {"video_key": key}
            if ds.layout == "v3":
                seg = ep.videos.get(key)
                if seg is None or seg.chunk_index is None or seg.file_index is None:
                    continue
                values.update(chunk_index=seg.chunk_index, file_index=seg.file_index)
            else:
                values.update(episode_index=ep.episode_index, episode_chunk=ep.episode_index // size)
            try:
                a, b = tpl.format_template(current, values), tpl.format_template(candidate, values)
            except ValueError:
                return None
            if tpl.escapes_root(a) or tpl.escapes_root(b):
                return None
            if out.get(a, b) != b:
                return None  # two referenced files would map to one
            out[a] = b
    if len(set(out.values())) != len(out):
        return None
    return sorted(out.items())


def fix_video_path(rc: RepairContext) -> None:
    """F002 + F003: every referenced video is missing where ``video_path`` points, while all of them sit in
    one recognisable neighbouring layout (e.g. the v2.1 default). Default: rewrite the template; with
    ``--move-files``: move the files to where the template points. Never both."""
    ds = rc.ds
    want_f002 = rc.options.selected("F002")
    if not ds.video_keys or not want_f002:
        return
    current = ds.video_path
    todo = "restore the missing video files (e.g. `lrtool prefetch`), or fix video_path by hand"
    try:
        if current is None:
            raise DatasetError("video_path is null", INFO_PATH)
        pairs0 = _video_pairs(ds, current, current)
    except DatasetError as exc:
        rc.cannot("F002", exc.message, todo)
        return
    if not pairs0:
        return
    present = [a for a, _ in pairs0 if sniff(ds.path(a)).kind != "missing"]
    matches = []
    for cand in dict.fromkeys(NEIGHBOUR_VIDEO_TEMPLATES.get(ds.layout or "", [])):
        if cand == current:
            continue
        pairs = _video_pairs(ds, current, cand)
        if pairs and all(sniff(ds.path(b)).kind != "missing" for _, b in pairs):
            matches.append((cand, pairs))
    if present or len(matches) != 1:
        why = ("some referenced video files exist where video_path points and others do not" if present and matches else
               "the missing video files are not all in one recognisable neighbouring layout")
        rc.cannot("F002", why, todo)
        return
    cand, pairs = matches[0]
    referenced_new = {b for _, b in pairs}
    orphans = {rel for rel in ds.files_under("videos", ".mp4")} - {a for a, _ in pairs}
    explained = orphans <= referenced_new
    if rc.options.move_files:
        problems = tpl.template_problems(current, layout=ds.layout, video=True)
        if problems:
            rc.cannot("F002", f"video_path {current!r} {problems[0]}", "fix video_path, or rerun without --move-files "
                      f"to point it at {cand!r}")
            return
        clash = [a for a, _ in pairs if (ds.root / a).exists()]
        if clash:
            rc.cannot("F002", f"{clash[0]} already exists", "move it away, then rerun")
            return
        for a, b in pairs:
            rc.moves.append(Move(src=b, dst=a, check="F002"))
        rc.repair("F002", f"move {len(pairs)} video file(s) from the layout {cand!r} to where video_path points "
                  f"({current!r})", [b for _, b in pairs] + [a for a, _ in pairs])
    else:
        if ds.layout == "v3" and cand != tpl.V3_VIDEO_PATH:
            rc.cannot("F002", f"the video files sit in the non-default v3.0 layout {cand!r}; lerobot tools hard-code "
                      "the default template", "rerun with --move-files to move them where video_path points")
            return
        rc.info["video_path"] = cand
        rc.repair("F002", f"video_path {current!r} -> {cand!r} (where all {len(pairs)} referenced video files are)",
                  [INFO_PATH])
    if rc.has("F003") and rc.options.selected("F003"):
        if explained:
            rc.repair("F003", "the unreferenced video files are the ones " + (
                "moved where video_path points" if rc.options.move_files else "the repaired video_path references"),
                [INFO_PATH] if not rc.options.move_files else [], {"file_kind": "video"})
        else:
            rc.cannot("F003", f"{len(orphans - referenced_new)} video file(s) stay unreferenced",
                      "delete the stray files or fix the metadata that should reference them", {"file_kind": "video"})
