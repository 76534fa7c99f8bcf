"""Validate's shortcuts give the findings the long way gives: the schema family works out a file's findings once
per distinct schema and metadata."""

from __future__ import annotations

import json

from lerobot_tools.validate import validate


def test_schema_findings_are_worked_out_per_distinct_schema_and_metadata(tmp_path):
    # five v2.1 files with one schema: one of them carries a huggingface entry that disagrees with info.json, one
    # stores the state as float64. Findings are computed once per distinct (schema, metadata), never shared
    # between files that differ in either.
    import pyarrow as pa
    import pyarrow.parquet as pq

    from lerobot_tools.testing.synth import SynthSpec, build_dataset

    root = build_dataset(tmp_path / "ds", SynthSpec(version="v2.1", episode_lengths=[5] * 5, video_keys=(),
                                                     video_codec=None))
    files = sorted((root / "data").rglob("*.parquet"))

    def rewrite(path, fn):
        t = fn(pq.read_table(path))
        pq.write_table(t, path)

    def bad_hf(t):
        meta = dict(t.schema.metadata)
        hf = json.loads(meta[b"huggingface"])
        hf["info"]["features"]["action"] = {"dtype": "string", "_type": "Value"}
        meta[b"huggingface"] = json.dumps(hf).encode()
        return t.replace_schema_metadata(meta)

    def float64_state(t):
        i = t.schema.get_field_index("observation.state")
        return t.set_column(i, pa.field("observation.state", pa.list_(pa.float64(), 6)),
                            t.column(i).cast(pa.list_(pa.float64(), 6)))

    rewrite(files[1], bad_hf)
    rewrite(files[3], float64_state)
    rep = validate([str(root)])[0]
    by_check = {}
    for f in rep.findings:
        by_check.setdefault(f.check, set()).update(f.paths or [f.path])
    rel = [str(p.relative_to(root)) for p in files]
    assert by_check.get("S006") == {rel[1]}, rep.findings
    assert by_check.get("S003") == {rel[3]}, rep.findings
    assert by_check.get("S007") == {rel[3]}, rep.findings
