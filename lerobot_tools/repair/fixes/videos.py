"""Video fixes: F009 declarations taken from the probed streams, F002 ``video_path`` pointed at the
neighbouring layout that holds the files (or the files moved with ``--move-files``).
"""

from __future__ import annotations

from lerobot_tools.dataset import templates as tpl
from lerobot_tools.dataset.model import INFO_PATH
from lerobot_tools.dataset.relocate import NEIGHBOUR_TEMPLATES
from lerobot_tools.errors import DatasetError
from lerobot_tools.repair.fixes.context import RepairContext
from lerobot_tools.repair.fixes.files import find_elsewhere, plan_moves


# =========================================================================== F009 video declarations
def fix_video_declarations(rc: RepairContext) -> None:
    """F009: ``video.codec``, ``video.pix_fmt``, ``video.fps`` and the feature shape (and ``video.height`` /
    ``video.width``) follow the probed stream when every referenced file of that camera is readable and they
    all agree (lerobot writes these keys from episode 0's file only, docs/failure-modes.md#video-info-episode-0). A
    stream frame rate that differs from info.json ``fps`` is not repairable: changing fps would re-time every
    frame."""
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


# =========================================================================== F002 video_path
#: Neighbouring video layouts recognised per layout (kept for callers; the search itself is
#: :func:`lerobot_tools.dataset.relocate.locate_missing`, which also tries other top folders and chunk folders).
NEIGHBOUR_VIDEO_TEMPLATES = {
    "v2": NEIGHBOUR_TEMPLATES[("v2", "video")],
    "v3": NEIGHBOUR_TEMPLATES[("v3", "video")],
}


def fix_video_path(rc: RepairContext) -> None:
    """F002: referenced videos missing where ``video_path`` points, found under a neighbouring layout (another
    top folder, the other version's camera/chunk order, another chunk folder: the same search as validate,
    :func:`lerobot_tools.dataset.relocate.locate_missing`).

    Default: ``video_path`` is pointed at that layout, when every file found fits one template and no referenced
    file is where the current template points (one template cannot point at both). With ``--move-files``: every
    file found is moved to where ``video_path`` points (any layout, partial finds included). Never both. Files
    absent everywhere stay missing and are named in the repair's summary; validate reports them afterwards."""
    ds = rc.ds
    if not ds.video_keys or not rc.options.selected("F002"):
        return
    todo = "restore the missing video files (e.g. `lrtool prefetch`), or fix video_path by hand"
    found = find_elsewhere(rc, "F002", "video", ds.video_path, ds.video_files, todo)
    if found is None:
        return
    current, reloc, n_expected = found
    pairs = [pair for lay in reloc.layouts for pair in lay.pairs]
    rest = (f"; {len(reloc.absent)} absent everywhere stay missing (e.g. {reloc.absent[0]})" if reloc.absent else "")
    if rc.options.move_files:
        plan_moves(rc, "F002", "video", current, reloc)
        return
    lay = reloc.single_template
    if lay is None:
        rc.cannot("F002", "the missing video files are in several layouts or other chunk folders: no one video_path "
                  "fits them", "rerun with --move-files to move them where video_path points")
        return
    present = n_expected - reloc.missing
    if present:
        rc.cannot("F002", f"{present} referenced video file(s) are where video_path points and {len(pairs)} under "
                  f"{lay.where}: one video_path cannot point at both", "rerun with --move-files to move them where "
                  "video_path points")
        return
    if ds.layout == "v3" and lay.template != tpl.V3_VIDEO_PATH:
        rc.cannot("F002", f"the video files sit in the non-default v3.0 layout {lay.template!r}; lerobot tools "
                  "hard-code the default template", "rerun with --move-files to move them where video_path points")
        return
    rc.info["video_path"] = lay.template
    rc.repair("F002", f"video_path {current!r} -> {lay.template!r} (where {len(pairs)} of the {n_expected} "
              f"referenced video files are){rest}", [INFO_PATH])

