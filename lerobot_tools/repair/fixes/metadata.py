"""The ``huggingface`` schema metadata: S006 rebuilds it from info.json; :func:`finalize` keeps it in step with
every declaration change and cast the other fixes planned. What counts as wrong metadata is decided in
:mod:`lerobot_tools.dataset.features`, the rule validate's S006 reports with.
"""

from __future__ import annotations

import copy

from lerobot_tools.dataset.features import (
    drifted_columns, hf_entry_agrees, hf_entry_fits_type, hf_metadata_problems, parse_hf_metadata,
)
from lerobot_tools.repair import hfmeta
from lerobot_tools.repair.fixes.context import RepairContext, files_text
from lerobot_tools.repair.model import ParquetChange


# =========================================================================== S006 huggingface metadata
def fix_hf_metadata(rc: RepairContext) -> None:
    """S006: a data file without (or with wrong) ``huggingface`` schema metadata gets it rebuilt from info.json
    as ``datasets`` writes it (docs/failure-modes.md#variable-lists, docs/format.md#columns). Runs after every
    declaration change."""
    files = []
    for rel, footer in rc.footers.items():
        schema = rc.planned_schema(rel)
        if hf_metadata_problems(rc.feats, schema, footer.metadata.get("huggingface"),
                                drifted=drifted_columns(rc.feats, schema)):
            files.append(rel)
    if files:
        rc.restore_hf.update(files)
        rc.repair("S006", f"restore the `huggingface` schema metadata of {files_text(files)} from info.json", files)


def finalize(rc: RepairContext) -> None:
    """Decide the ``huggingface`` metadata of every data file the plan rewrites or whose declarations changed:
    S006 files get it rebuilt in full; other files that carry it get the entries of touched columns updated
    (so a declaration or cast never leaves the metadata contradicting info.json)."""
    for rel, footer in rc.footers.items():
        change = rc.parquet.get(rel)
        schema = rc.planned_schema(rel)
        raw = footer.metadata.get("huggingface")
        doc = parse_hf_metadata(raw)
        drifted = drifted_columns(rc.feats, schema)
        if rel in rc.restore_hf:
            base = doc if doc is not None else {"info": {"features": {}}}
            new = copy.deepcopy(base)
            new["info"]["features"] = hfmeta.rebuild_features(rc.feats, schema, base["info"]["features"], drifted)
            ch = rc.parquet.setdefault(rel, ParquetChange(rel))
            ch.hf_features = new
            ch.hf_checks.add("S006")
            continue
        if doc is None:
            continue
        touched: dict[str, str] = {}
        for op in change.ops if change else []:
            touched[op.column] = op.check
        for name in schema.names:
            if name in rc.decl_changed:
                touched.setdefault(name, rc.decl_changed[name])
        if not touched:
            continue
        old = doc["info"]["features"]
        feats = dict(old)
        checks = set()
        for name, check in touched.items():
            if name not in schema.names:
                if feats.pop(name, None) is not None:
                    checks.add(check)
                continue
            field_type = schema.field(name).type
            entry = feats.get(name)
            feat = rc.feats.get(name)
            if entry is None and not isinstance(feat, dict):
                continue
            if entry is None or not hf_entry_agrees(feat, entry) or not hf_entry_fits_type(entry, field_type):
                feats[name] = hfmeta.declared_feature_json(feat if name not in drifted else None, field_type)
                checks.add(check)
        if feats != old:
            new = copy.deepcopy(doc)
            new["info"]["features"] = feats
            ch = rc.parquet.setdefault(rel, ParquetChange(rel))
            ch.hf_features = new
            ch.hf_checks |= checks
