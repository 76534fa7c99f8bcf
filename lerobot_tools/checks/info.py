"""Family I: meta/info.json — JSON Schema per layout, version, fps, features, templates.

Sources: docs/format.md#info-json (keys; parsing rules of lerobot ``DatasetInfo``, huggingface/lerobot@7427f318),
docs/format.md#features, docs/format.md#layouts (templates); docs/failure-modes.md (#slash-in-name, #camera-names,
#fractional-fps, #video-path-mismatch).
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from importlib import resources

from lerobot_tools.checks.context import CheckContext, StopChecks
from lerobot_tools.dataset import templates as tpl
from lerobot_tools.dataset.model import DEFAULT_FEATURES, INFO_PATH, KNOWN_VERSIONS, MAX_FPS, valid_fps
from lerobot_tools.findings import INFO

NUMERIC_DTYPES = {
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64",
}
SPECIAL_DTYPES = {"image", "video", "string", "language"}
CAMERA_NAMES = (["height", "width", "channels"], ["height", "width", "channel"])
#: channel-first names: lerobot's dataset_to_policy_features keeps such a shape as (C, H, W), which is right
CHW_NAMES = (["channels", "height", "width"], ["channel", "height", "width"])


@lru_cache(maxsize=4)
def _validator(layout: str):
    import jsonschema

    doc = json.loads(resources.files("lerobot_tools").joinpath("schemas/info.schema.json").read_text("utf-8"))
    defn = {"v2": "info_v2", "v3": "info_v3"}.get(layout, "common")
    schema = {"$schema": doc["$schema"], "$ref": f"#/$defs/{defn}", "$defs": doc["$defs"]}
    return jsonschema.Draft202012Validator(schema)


def known_dtype(dtype: object) -> bool:
    """True for the dtypes lerobot accepts: numpy dtype names or image/video/string/language (docs/format.md#features)."""
    if not isinstance(dtype, str):
        return False
    if dtype in NUMERIC_DTYPES or dtype in SPECIAL_DTYPES:
        return True
    try:
        import numpy as np

        np.dtype(dtype)
        return True
    except (TypeError, ValueError):
        return False


def names_problem(name: str, feat: dict) -> tuple[str, bool] | None:
    """Describe how ``names`` disagrees with ``shape``; returns ``(message, repairable)`` or None.

    ``repairable`` is True when the fix needs no invented name (a singly nested list that flattens to
    the right length).
    """
    names, shape = feat.get("names"), feat.get("shape")
    if names is None or not isinstance(shape, list) or not shape or not all(isinstance(s, int) for s in shape):
        return None
    camera = feat.get("dtype") in ("image", "video")
    expected = len(shape) if camera else shape[0]
    what = "one name per dimension" if camera else f"shape[0] = {shape[0]} names"
    if isinstance(names, dict):
        lists = [v for v in names.values() if isinstance(v, list)]
        if len(lists) != len(names):
            return "names is a dict whose values are not all lists", False
        if camera or any(len(v) == expected for v in lists) or sum(len(v) for v in lists) == expected:
            return None
        return f"names lists have {[len(v) for v in lists]} entries, expected {what}", False
    if not isinstance(names, list):
        return f"names must be null, a list or a dict, got {type(names).__name__}", False
    if len(names) == 1 and isinstance(names[0], list):
        inner = names[0]
        ok = all(isinstance(n, str) for n in inner) and len(inner) == expected
        return (f"names is a nested list [[...]] of {len(inner)} entries; expected a flat list of {what}", ok)
    if not all(isinstance(n, str) for n in names):
        return "names must be strings", False
    if camera:
        if len(names) != len(shape):
            return f"names has {len(names)} entries for a rank-{len(shape)} camera shape", False
        return None
    if len(shape) > 1 and len(names) == len(shape):
        return None
    if len(names) != expected:
        return f"names has {len(names)} entries, shape {shape} needs {expected}", False
    return None


def run(ctx: CheckContext) -> None:
    """Family I: meta/info.json on its own.

    Emits I003 (JSON Schema), I004 (codebase_version), I005 (fps), I006 (feature dtype/shape), I007 (names vs
    shape), I008 (templates), I009 (camera names), I010 (default features), I011 ('/' in a name).
    Reads ``ctx.dataset.info``; sets no context field.

    Raises:
        StopChecks: codebase_version is unknown, so no file layout can be checked.
    """
    ds = ctx.dataset
    assert ds is not None
    info = ds.info
    layout = ds.layout

    # I004 codebase_version
    version = info.get("codebase_version")
    if version is None:
        ctx.emit("I004", "codebase_version is missing", INFO_PATH, key="codebase_version")
    elif not isinstance(version, str) or ds.version is None:
        ctx.emit("I004", f"codebase_version {version!r} is not a version string like 'v2.1' or 'v3.0'", INFO_PATH,
                 key="codebase_version")
    elif layout is None:
        ctx.emit("I004", f"codebase_version {version!r} is not supported (known: {', '.join(KNOWN_VERSIONS)})", INFO_PATH,
                 key="codebase_version")
    elif version not in KNOWN_VERSIONS:
        ctx.emit("I004", f"codebase_version {version!r} is not one of {', '.join(KNOWN_VERSIONS)}; "
                 f"checked as {'v3.0' if layout == 'v3' else 'v2.1'}", INFO_PATH, severity="warning", key="codebase_version")

    # I003 / I006 JSON Schema
    for err in sorted(_validator(layout or "any").iter_errors(info), key=lambda e: list(e.absolute_path)):
        steps = list(err.absolute_path)
        where = "/".join(str(p) for p in steps)
        msg = err.message if len(err.message) <= 160 else err.message[:157] + "..."
        if where.startswith("features"):
            feature = str(steps[1]) if steps[:1] == ["features"] and len(steps) > 1 else None
            ctx.emit("I006", f"{where}: {msg}", INFO_PATH, feature=feature, key=None if feature else str(steps[0]))
        else:
            ctx.emit("I003", f"{where or '(top level)'}: {msg}", INFO_PATH, key=str(steps[0]) if steps else None)

    # I005 fps
    fps = info.get("fps")
    if isinstance(fps, bool) or not isinstance(fps, (int, float)):
        if fps is not None:
            ctx.emit("I005", f"fps {fps!r} is not a number", INFO_PATH, key="fps")
    elif isinstance(fps, float) and not math.isfinite(fps):
        ctx.emit("I005", f"fps {fps!r} is not a finite number (lerobot computes frame times with it)", INFO_PATH,
                 key="fps")
    elif fps > 0 and valid_fps(fps) is None:
        text = f"{fps:.3g}" if isinstance(fps, float) else str(fps)
        shown = text if len(text) <= 15 else f"{text[:12]}… ({len(text)} digits)"
        ctx.emit("I005", f"fps {shown} is not a plausible frame rate (more than {MAX_FPS} frames per second)",
                 INFO_PATH, key="fps")
    elif fps <= 0:
        ctx.emit("I005", f"fps {fps!r} must be > 0 (lerobot raises ValueError)", INFO_PATH, key="fps")
    elif isinstance(fps, float):
        if fps.is_integer():
            ctx.emit("I005", f"fps is the float {fps!r}; loaders assume an integer", INFO_PATH, severity="warning", key="fps")
        else:
            ctx.emit("I005", f"fps {fps!r} is not an integer frame rate", INFO_PATH, key="fps")

    feats = info.get("features")
    if isinstance(feats, dict):
        _check_features(ctx, feats)

    # I008 templates
    if layout in ("v2", "v3"):
        _check_templates(ctx, info, layout, bool(ds.video_keys))

    if layout is None:
        raise StopChecks("codebase_version is unknown, so the file layout cannot be determined")


def _check_features(ctx: CheckContext, feats: dict) -> None:
    for name, feat in feats.items():
        if "/" in name:
            ctx.emit("I011", f"feature name {name!r} contains '/'", INFO_PATH, feature=name)
        if not isinstance(feat, dict):
            continue  # reported by the schema (I006)
        dtype, shape = feat.get("dtype"), feat.get("shape")
        if isinstance(dtype, str) and not known_dtype(dtype):
            ctx.emit("I006", f"feature {name!r}: unknown dtype {dtype!r}", INFO_PATH, feature=name)
        if isinstance(shape, list) and all(isinstance(s, int) and not isinstance(s, bool) for s in shape):
            if not 1 <= len(shape) <= 5:
                ctx.emit("I006", f"feature {name!r}: shape {shape} has rank {len(shape)} (lerobot supports 1-5)", INFO_PATH,
                         feature=name)
            elif dtype in ("image", "video") and len(shape) != 3:
                ctx.emit("I006", f"camera feature {name!r}: shape {shape} is not rank 3 [H, W, C]", INFO_PATH, feature=name)
        problem = names_problem(name, feat)
        if problem:
            msg, repairable = problem
            hint = " (repairable)" if repairable else ""
            ctx.emit("I007", f"feature {name!r}: {msg}{hint}", INFO_PATH, feature=name)
        if dtype in ("image", "video"):
            names = feat.get("names")
            if names is None:
                ctx.emit("I009", f"camera feature {name!r} has names: null (dataset_to_policy_features raises TypeError)",
                         INFO_PATH, feature=name)
            elif isinstance(names, list) and len(names) == 3 and all(isinstance(n, str) for n in names) \
                    and names not in CAMERA_NAMES and names not in CHW_NAMES:
                ctx.emit("I009", f"camera feature {name!r} names {names} are not [height, width, channels]; "
                         "the shape will be read as CHW", INFO_PATH, feature=name)
            elif names in CHW_NAMES and isinstance(shape, list) and len(shape) == 3 and shape[0] not in (1, 3, 4):
                ctx.emit("I009", f"camera feature {name!r} names {names} say channels first but shape {shape} "
                         "does not start with a channel count; the shape will be read as CHW", INFO_PATH,
                         feature=name)
    for name, dtype in DEFAULT_FEATURES.items():
        feat = feats.get(name)
        if not isinstance(feat, dict):
            ctx.emit("I010", f"default feature {name!r} is not declared", INFO_PATH, group="default features are not declared",
                     feature=name)
        elif feat.get("dtype") != dtype or feat.get("shape") != [1]:
            ctx.emit("I010", f"default feature {name!r} is {feat.get('dtype')} {feat.get('shape')}, lerobot writes {dtype} [1]",
                     INFO_PATH, feature=name)


def _check_templates(ctx: CheckContext, info: dict, layout: str, has_videos: bool) -> None:
    if "data_path" in info:
        problems = tpl.template_problems(info["data_path"], layout=layout, video=False)
        for p in problems:
            ctx.emit("I008", f"data_path {info['data_path']!r} {p}", INFO_PATH, key="data_path")
        if layout == "v3" and info["data_path"] != tpl.V3_DATA_PATH and isinstance(info["data_path"], str) \
                and not problems:  # one template, one finding
            ctx.emit("I008", f"data_path {info['data_path']!r} is not the v3.0 default; the v3 loader globs "
                     "data/*/*.parquet regardless", INFO_PATH, severity="warning", key="data_path")
    vp = info.get("video_path")
    if has_videos:
        if "video_path" in info and vp is None:
            ctx.emit("I008", "video_path is null but video features are declared", INFO_PATH, key="video_path")
        elif vp is not None:
            vproblems = tpl.template_problems(vp, layout=layout, video=True)
            for p in vproblems:
                ctx.emit("I008", f"video_path {vp!r} {p}", INFO_PATH, key="video_path")
            if layout == "v3" and vp != tpl.V3_VIDEO_PATH and isinstance(vp, str) and not vproblems:
                ctx.emit("I008", f"video_path {vp!r} is not the v3.0 default; lerobot tools hard-code the default",
                         INFO_PATH, severity="warning", key="video_path")
    elif isinstance(vp, str):
        # lerobot's writer keeps the template whenever use_videos=True, cameras or not; loaders expand it only
        # for video features, so it is never used.
        ctx.emit("I008", "video_path is set but no video feature is declared (lerobot's writer keeps the template; "
                 "no loader uses it)", INFO_PATH, severity=INFO, key="video_path")
