"""Family S: info.json features against the parquet schema, from footers only.

Sources: docs/format.md#columns (features -> HF features -> Arrow; physical variants; the ``huggingface`` key;
lerobot 0.4.4 ``datasets/utils.py`` ``get_hf_features_from_features``), docs/format.md#L9; docs/failure-modes.md
(#undeclared-column, #missing-column, #scalar-as-list, #variable-lists, #list-type-name). The rules themselves
(column forms, :func:`~lerobot_tools.dataset.features.compare_feature`, the ``huggingface`` metadata rule) live in
:mod:`lerobot_tools.dataset.features`, so that ``lrtool repair`` decides what to cast and rewrite with the same
rules validate reports with.
"""

from __future__ import annotations

from collections import Counter

from lerobot_tools.checks.context import CheckContext
from lerobot_tools.dataset.features import compare_feature, drifted_columns, hf_metadata_problems
from lerobot_tools.findings import INFO


#: the columns each layout's loader reads from every row, whatever info.json declares, and where it reads them
LOADER_COLUMNS = {
    "v2": {  # lerobot 0.3.3, src/lerobot/datasets/lerobot_dataset.py
        "timestamp": "lerobot 0.3.3 LeRobotDataset.__init__: check_timestamps_sync",
        "episode_index": "lerobot 0.3.3 LeRobotDataset.__init__ and __getitem__",
        "task_index": "lerobot 0.3.3 LeRobotDataset.__getitem__: item['task_index']",
    },
    "v3": {  # lerobot 0.4.4, src/lerobot/datasets/lerobot_dataset.py
        "timestamp": "lerobot 0.4.4 LeRobotDataset.__getitem__: item['timestamp'] locates the video frames",
        "episode_index": "lerobot 0.4.4 LeRobotDataset.__getitem__: item['episode_index']",
        "index": "lerobot 0.4.4 LeRobotDataset.__getitem__: item['index']",
        "task_index": "lerobot 0.4.4 LeRobotDataset.__getitem__: item['task_index']",
    },
}


def run(ctx: CheckContext) -> None:
    """Family S: info.json features against every readable data file's Arrow schema (footers only).

    Emits S001-S007. Reads ``ctx.footers``, ``ctx.episodes_ok``, ``ctx.bad_data_files`` and
    ``ctx.data_files``; sets nothing.
    """
    ds = ctx.dataset
    if not ctx.footers:
        if ctx.episodes_ok and not ctx.bad_data_files and not ctx.data_files:
            ctx.skip("S001-S007", "the metadata references no data files")
        return
    feats = ds.features
    declared = [k for k, v in feats.items() if v.get("dtype") != "video"]
    # files of one dataset nearly always share one schema and one metadata: the findings of a file depend on
    # nothing else, so they are worked out once per distinct (schema, huggingface metadata, pandas metadata)
    found: dict[tuple, list[tuple]] = {}
    signatures: dict[str, tuple] = {}  # rel -> _signature(schema), for S007
    for rel, footer in ctx.footers.items():
        key = (footer.schema, footer.metadata.get("huggingface"), "pandas" in footer.metadata)
        try:
            entry = found.get(key)
        except TypeError:  # an unhashable schema: no reuse
            key, entry = None, None
        if entry is None:
            entry = (_file_findings(ctx, footer, feats, declared), _signature(footer.schema))
            if key is not None:
                found[key] = entry
        todo, signatures[rel] = entry
        for check, msg, severity, feature in todo:
            ctx.emit(check, msg, rel, severity=severity, group=msg, feature=feature)
    _check_cross_file(ctx, signatures)


def _file_findings(ctx: CheckContext, footer, feats: dict, declared: list[str]) -> list[tuple]:
    """The S001-S006 findings of one data file as ``(check, message, severity or None, feature)``, in report
    order; they depend only on the file's Arrow schema and its ``huggingface``/``pandas`` metadata."""
    out: list[tuple] = []
    schema = footer.schema
    names = schema.names
    present = set(names)
    for name in declared:
        if name not in present:
            out.append(("S001", f"declared feature {name!r} has no column in the data (datasets fills it with None)",
                        None, name))
    for name, reader in LOADER_COLUMNS.get(ctx.dataset.layout, {}).items():
        if name == "timestamp" and ctx.dataset.layout == "v3" and not ctx.dataset.video_keys:
            continue  # lerobot 0.4.4 reads it only to locate video frames
        if name not in present and name not in feats:
            out.append(("S001", f"column {name!r} is neither in the data nor declared, and the loader reads it "
                        f"({reader}): KeyError", None, name))
    for name in names:
        if name not in feats:
            out.append(("S002", f"column {name!r} ({schema.field(name).type}) is not declared in info.json features",
                        None, name))
            continue
        for check, sev, msg in compare_feature(name, feats[name], schema.field(name).type):
            out.append((check, msg, sev, name))
    if ctx.enabled("S006"):
        out.extend(_hf_metadata_findings(footer, feats))
    return out


def _hf_metadata_findings(footer, feats: dict) -> list[tuple]:
    """S006 (:func:`~lerobot_tools.dataset.features.hf_metadata_problems`). Columns already reported by
    S002-S005 are skipped; a missing key on a file without pandas metadata is only info."""
    drifted = drifted_columns(feats, footer.schema)
    return [("S006", p.message, INFO if p.kind == "missing" else None, p.feature)
            for p in hf_metadata_problems(feats, footer.schema, footer.metadata.get("huggingface"),
                                          has_pandas="pandas" in footer.metadata, drifted=drifted)]


def _signature(schema) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((f.name, str(f.type)) for f in schema))


def _check_cross_file(ctx: CheckContext, signatures: dict[str, tuple]) -> None:
    """S007: files whose schema (:func:`_signature`, given per file) differs from the majority's."""
    if not ctx.enabled("S007") or len(signatures) < 2:
        return
    sigs: dict[tuple, list[str]] = {}
    for rel, sig in signatures.items():
        sigs.setdefault(sig, []).append(rel)
    if len(sigs) < 2:
        return
    counts = Counter({sig: len(files) for sig, files in sigs.items()})
    majority, n_major = counts.most_common(1)[0]
    major = dict(majority)
    for sig, files in sigs.items():
        if sig is majority:
            continue
        other = dict(sig)
        diffs = []
        columns = []
        for name in sorted(set(major) | set(other)):
            a, b = major.get(name), other.get(name)
            if a == b:
                continue
            columns.append(name)
            if a is None:
                diffs.append(f"extra column {name!r}")
            elif b is None:
                diffs.append(f"no column {name!r}")
            else:
                diffs.append(f"{name!r} is {b} (others: {a})")
        shown = "; ".join(diffs[:4]) + ("; ..." if len(diffs) > 4 else "")
        ctx.emit("S007", f"{len(files)} data file(s) differ from the schema of the other {n_major}: {shown}", files[0],
                 feature=columns)
