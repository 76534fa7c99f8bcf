"""Family S: info.json features against the parquet schema, from footers only.

Sources: lerobot-format §5 (features -> HF features -> Arrow; physical variants; the ``huggingface`` key),
§14 I9; pitfalls A1-A5. The rules themselves (column forms, :func:`~lerobot_tools.dataset.features.compare_feature`,
the ``huggingface`` metadata rule) live in :mod:`lerobot_tools.dataset.features`, so that ``lrtool repair``
decides what to cast and rewrite with the same rules validate reports with.
"""

from __future__ import annotations

from collections import Counter

from lerobot_tools.checks.context import CheckContext
from lerobot_tools.dataset.features import compare_feature, drifted_columns, hf_metadata_problems
from lerobot_tools.findings import INFO


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
    for rel, footer in ctx.footers.items():
        schema = footer.schema
        names = schema.names
        present = set(names)
        for name in declared:
            if name not in present:
                msg = f"declared feature {name!r} has no column in the data (datasets fills it with None)"
                ctx.emit("S001", msg, rel, group=msg, feature=name)
        for name in names:
            if name not in feats:
                msg = f"column {name!r} ({schema.field(name).type}) is not declared in info.json features"
                ctx.emit("S002", msg, rel, group=msg, feature=name)
                continue
            for check, sev, msg in compare_feature(name, feats[name], schema.field(name).type):
                ctx.emit(check, msg, rel, severity=sev, group=msg, feature=name)
        _check_hf_metadata(ctx, rel, footer, feats)
    _check_cross_file(ctx)


def _check_hf_metadata(ctx: CheckContext, rel: str, footer, feats: dict) -> None:
    """S006 (:func:`~lerobot_tools.dataset.features.hf_metadata_problems`). Columns already reported by
    S002-S005 are skipped; a missing key on a file without pandas metadata is only info."""
    if not ctx.enabled("S006"):
        return
    drifted = drifted_columns(feats, footer.schema)
    for p in hf_metadata_problems(feats, footer.schema, footer.metadata.get("huggingface"),
                                  has_pandas="pandas" in footer.metadata, drifted=drifted):
        ctx.emit("S006", p.message, rel, severity=INFO if p.kind == "missing" else None, group=p.message,
                 feature=p.feature)


def _signature(schema) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((f.name, str(f.type)) for f in schema))


def _check_cross_file(ctx: CheckContext) -> None:
    if not ctx.enabled("S007") or len(ctx.footers) < 2:
        return
    sigs: dict[tuple, list[str]] = {}
    for rel, footer in ctx.footers.items():
        sigs.setdefault(_signature(footer.schema), []).append(rel)
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
