"""Build the speed benchmark's datasets: a real-form dataset replicated to many episodes.

* ``v2.1`` (default): a template of ``TEMPLATE_EPISODES`` episodes written by
  :func:`lerobot_tools.testing.synth.build_dataset` (one parquet and one h264 mp4 per episode, the v2.1
  writer's layout and metadata), replicated to N episodes: episode ``k`` is template episode
  ``k % TEMPLATE_EPISODES`` with its ``episode_index``/``index`` columns rewritten, its video copied, and
  ``episodes.jsonl`` / ``episodes_stats.jsonl`` / ``stats.json`` / ``info.json`` updated, so the result is a
  consistent dataset (``lrtool validate`` finds no error or warning in it).
* ``v3.0``: a dataset written by upstream lerobot's own writer (``fixtures/real/h264-pandas3``: 3 episodes,
  one data file, two cameras) replicated file by file: replica ``r`` becomes data file ``file-r``, episodes
  metadata file ``file-r`` and video files ``file-r`` of each camera, with the episode, index and file
  columns shifted.

Writing N episodes through the synthetic builder would encode N videos (minutes on 2 cores); replication
takes seconds. Only numpy/pyarrow and the standard library are used.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

TEMPLATE_EPISODES = 10
REAL_V30 = Path(__file__).resolve().parent.parent / "fixtures/real/h264-pandas3"


def build_v21_template(root: Path) -> Path:
    """A 10-episode v2.1 dataset (30 fps, 250-350 frames, 6-D state/action, one 240x320 h264 camera)."""
    import numpy as np

    from lerobot_tools.testing.synth import SynthSpec, build_dataset

    lengths = [int(x) for x in np.random.default_rng(0).integers(250, 350, TEMPLATE_EPISODES)]
    return build_dataset(root, SynthSpec(version="v2.1", episode_lengths=lengths, fps=30, video_size=(240, 320),
                                         tasks=("Pick the cube and place it in the bin",
                                                "Push the block to the corner")))


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _index_stats(values) -> dict:
    import numpy as np

    a = np.asarray(values, dtype=np.float64)
    return {"min": [int(a.min())], "max": [int(a.max())], "mean": [float(a.mean())], "std": [float(a.std())],
            "count": [len(a)]}


def replicate_v21(template: Path, dst: Path, episodes: int) -> Path:
    """Write a v2.1 dataset of ``episodes`` episodes under ``dst`` by replicating ``template``."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    info = json.loads((template / "meta/info.json").read_text())
    tpl_eps = _jsonl(template / "meta/episodes.jsonl")
    tpl_stats = {r["episode_index"]: r["stats"] for r in _jsonl(template / "meta/episodes_stats.jsonl")}
    cs = info["chunks_size"]
    video_keys = [k for k, f in info["features"].items() if f["dtype"] == "video"]
    tables = {}
    eps, stats_rows = [], []
    start = 0
    for k in range(episodes):
        src = tpl_eps[k % len(tpl_eps)]
        e, n = src["episode_index"], src["length"]
        if e not in tables:
            tables[e] = pq.read_table(template / info["data_path"].format(episode_chunk=e // cs, episode_index=e))
        t = tables[e]
        index = np.arange(start, start + n, dtype=np.int64)
        t = t.set_column(t.schema.get_field_index("episode_index"), "episode_index",
                         pa.array(np.full(n, k, dtype=np.int64)))
        t = t.set_column(t.schema.get_field_index("index"), "index", pa.array(index))
        out = dst / info["data_path"].format(episode_chunk=k // cs, episode_index=k)
        out.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(t, out, compression="snappy", use_dictionary=True)
        for key in video_keys:
            v = info["video_path"]
            vout = dst / v.format(episode_chunk=k // cs, video_key=key, episode_index=k)
            vout.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(template / v.format(episode_chunk=e // cs, video_key=key, episode_index=e), vout)
        st = json.loads(json.dumps(tpl_stats[e]))
        st["episode_index"] = _index_stats([k] * n)
        st["index"] = _index_stats(index)
        eps.append({"episode_index": k, "tasks": src["tasks"], "length": n})
        stats_rows.append({"episode_index": k, "stats": st})
        start += n
    meta = dst / "meta"
    meta.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(template / "meta/tasks.jsonl", meta / "tasks.jsonl")
    _write_jsonl(meta / "episodes.jsonl", eps)
    _write_jsonl(meta / "episodes_stats.jsonl", stats_rows)
    stats = json.loads((template / "meta/stats.json").read_text())
    stats["episode_index"] = {"min": [0], "max": [episodes - 1], "mean": [0.0], "std": [0.0], "count": [start]}
    stats["index"] = {"min": [0], "max": [start - 1], "mean": [(start - 1) / 2], "std": [0.0], "count": [start]}
    (meta / "stats.json").write_text(json.dumps(stats, indent=4))
    info.update(total_episodes=episodes, total_frames=start, total_videos=episodes * len(video_keys),
                total_chunks=-(-episodes // cs), splits={"train": f"0:{episodes}"})
    (meta / "info.json").write_text(json.dumps(info, indent=4))
    return dst


def replicate_v30(template: Path, dst: Path, episodes: int) -> Path:
    """Write a v3.0 dataset of at least ``episodes`` episodes under ``dst`` by replicating ``template`` (one data
    file, one episodes file and one video file per camera) file by file."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    info = json.loads((template / "meta/info.json").read_text())
    if info["total_episodes"] < 1 or not (template / "data/chunk-000/file-000.parquet").is_file():
        raise SystemExit(f"{template}: expected a v3.0 dataset in one data file")
    e0, n0 = info["total_episodes"], info["total_frames"]
    cs = info["chunks_size"]
    replicas = -(-episodes // e0)
    video_keys = [k for k, f in info["features"].items() if f["dtype"] == "video"]
    data = pq.ParquetFile(template / "data/chunk-000/file-000.parquet")
    groups = [data.read_row_group(i) for i in range(data.num_row_groups)]
    meta_tbl = pq.read_table(template / "meta/episodes/chunk-000/file-000.parquet")
    meta_rows_json = json.dumps(meta_tbl.to_pylist())

    def shifted(t: pa.Table, cols: dict[str, int]) -> pa.Table:
        for name, off in cols.items():
            if name in t.column_names and off:
                i = t.schema.get_field_index(name)
                col = t.column(i)
                t = t.set_column(i, t.field(i), pc.add(col, pa.scalar(off, col.type)).cast(col.type))
        return t

    for r in range(replicas):
        chunk, file = divmod(r, cs)
        ep_off, ix_off = r * e0, r * n0
        rel = info["data_path"].format(chunk_index=chunk, file_index=file)
        (dst / rel).parent.mkdir(parents=True, exist_ok=True)
        with pq.ParquetWriter(dst / rel, data.schema_arrow, compression="snappy") as w:
            for g in groups:
                w.write_table(shifted(g, {"episode_index": ep_off, "index": ix_off}))
        cols = {"episode_index": ep_off, "dataset_from_index": ix_off, "dataset_to_index": ix_off,
                "data/chunk_index": chunk, "data/file_index": file,
                "meta/episodes/chunk_index": chunk, "meta/episodes/file_index": file}
        for key in video_keys:
            cols[f"videos/{key}/chunk_index"] = chunk
            cols[f"videos/{key}/file_index"] = file
        for stat in ("min", "max", "mean", "q01", "q10", "q50", "q90", "q99"):
            cols[f"stats/episode_index/{stat}"] = ep_off
            cols[f"stats/index/{stat}"] = ix_off
        mrel = dst / f"meta/episodes/chunk-{chunk:03d}/file-{file:03d}.parquet"
        mrel.parent.mkdir(parents=True, exist_ok=True)
        rows = meta_rows_json and json.loads(meta_rows_json)
        for row in rows:
            for name, off in cols.items():
                if name in row and row[name] is not None:
                    v = row[name]
                    row[name] = [x + off for x in v] if isinstance(v, list) else v + off
        m = pa.Table.from_pylist(rows, schema=meta_tbl.schema)
        pq.write_table(m, mrel)
        for key in video_keys:
            v = info["video_path"]
            vout = dst / v.format(video_key=key, chunk_index=chunk, file_index=file)
            vout.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(template / v.format(video_key=key, chunk_index=0, file_index=0), vout)
    meta = dst / "meta"
    shutil.copyfile(template / "meta/tasks.parquet", meta / "tasks.parquet")
    shutil.copyfile(template / "meta/stats.json", meta / "stats.json")
    total_eps = replicas * e0
    info.update(total_episodes=total_eps, total_frames=replicas * n0, splits={"train": f"0:{total_eps}"})
    (meta / "info.json").write_text(json.dumps(info, indent=4))
    return dst


def build(layout: str, root: Path, episodes: int) -> Path:
    """The benchmark dataset of ``layout`` (``"v2.1"`` or ``"v3.0"``) with ``episodes`` episodes, under ``root``
    (reused when it is already there)."""
    dst = root / f"{layout}-{episodes}"
    if (dst / "meta/info.json").is_file():
        return dst
    tmp = root / f".{layout}-{episodes}.partial"
    shutil.rmtree(tmp, ignore_errors=True)
    if layout == "v2.1":
        tpl = root / "v2.1-template"
        if not (tpl / "meta/info.json").is_file():
            shutil.rmtree(tpl, ignore_errors=True)
            build_v21_template(tpl)
        replicate_v21(tpl, tmp, episodes)
    else:
        replicate_v30(REAL_V30, tmp, episodes)
    tmp.rename(dst)
    return dst
