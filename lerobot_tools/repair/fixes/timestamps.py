"""Timestamp fixes: F010 v3.0 segments re-derived from the frames' own timestamps, D003 a ``timestamp`` column
re-derived from the video's frame timestamps. Both only where the mapping from rows to frames is mechanical.

Which frames are an episode's: the timestamp audit's positional rule (docs/video-timestamps.md#causes). A v3.0 mp4
holds its episodes one after the other (lerobot 0.4.4 ``concatenate_video_files``), so when the episodes the
metadata places in a file have as many frames in all as the file holds (every frame's timestamp read from its sample
tables, :mod:`lerobot_tools.video.timing`), episode ``e``'s frames are the positions ``s_e .. s_e + length_e - 1`` in
presentation order, ``s_e`` the lengths of the episodes before it. Then:

* **F010, drifted segments** (huggingface/lerobot#3177): ``from_timestamp = PTS[s_e]`` and ``to_timestamp =
  PTS[s_e + length_e]`` (the next episode's first frame; the last episode's ends where its last frame does), what
  lerobot's writer stores (each segment's start is the previous one's end, its span the episode mp4's duration).
  Only the cells that change are rewritten (``meta/episodes``), per camera;
* **D003, a timestamp column that is not frame_index / fps** (a host clock, rows that follow the recording and not
  the frames): ``timestamp[k] = PTS[s_e + k] - PTS[s_e]``, when every camera holds the episode's frames that way
  **and** those frames are evenly spaced at 1 / fps (within ``tolerance_s``): a constant-rate video with one frame
  per row says when each row's frame was shown, and that is what the writer's ``frame_index / fps`` is. The
  episode's ``timestamp`` statistics are recomputed from the new values (lerobot's ``compute_stats``), and
  ``stats.json``'s entry re-aggregated, so the statistics stay consistent.

Anything else (the file holds another number of frames than its episodes' rows, the cameras disagree, the frames
are not evenly spaced) is ambiguous: the finding is left with the reason and nothing is written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lerobot_tools.dataset.model import STATS_PATH
from lerobot_tools.errors import DatasetError
from lerobot_tools.repair.fixes.context import RepairContext

#: checks this module answers
TIMESTAMP_CHECKS = ("F010", "D003")


def _times(ds, rel: str):
    """The frame times of video ``rel`` (every frame's PTS), or a one-line reason why they are unknown."""
    from lerobot_tools.video.probe import probe_video
    from lerobot_tools.video.timing import FrameTimes

    p = probe_video(ds.path(rel), pyav=True)
    if not p.ok:
        return None, f"{rel} cannot be read ({p.problem})"
    if not p.frame_times:
        return None, f"{rel}: {p.frame_times_unknown or 'its frame times are unknown'}"
    return FrameTimes.from_dict(p.frame_times), None


def _layout(ds, vf, ft) -> tuple[list[tuple[int, int, int]] | None, str | None]:
    """``[(episode, first position, length)]`` of the episodes of a video file in file order, when the file holds
    exactly their frames; else None and why."""
    by_ep = {e.episode_index: e for e in ds.episodes}
    eps = []
    for ep in vf.episodes:
        e = by_ep.get(ep)
        if e is None or not e.length:
            return None, f"episode {ep} has no length"
        seg = e.videos.get(vf.video_key) if ds.layout == "v3" else None
        start = seg.from_timestamp if seg is not None else 0.0
        if ds.layout == "v3" and start is None:
            return None, f"episode {ep} has no from_timestamp for {vf.video_key}"
        eps.append((start, ep, e.length))
    eps.sort()
    total = sum(n for _, _, n in eps)
    if total != ft.count:
        return None, (f"{vf.relpath} holds {ft.count} frames but its episodes {total} rows: which frames are whose "
                      "is ambiguous")
    out, pos = [], 0
    for _, ep, n in eps:
        out.append((ep, pos, n))
        pos += n
    return out, None


# =========================================================================== F010: segments
def fix_segment_times(rc: RepairContext) -> None:
    """F010 on a v3.0 dataset: re-derive ``from_timestamp``/``to_timestamp`` of the episodes of every file named by an
    F010 finding from the frames' own timestamps (see the module docstring). Plans a cell rewrite of
    ``meta/episodes``; a file whose mapping is ambiguous, or whose re-derived segments still do not land every query
    on its own frame, is left alone with the reason."""
    ds = rc.ds
    if ds.layout != "v3":
        rc.cannot("F010", "a v2.x episode is queried in its own mp4 from 0: there is no segment to re-derive",
                  "re-encode or re-record the video so it holds the episode's frames")
        return
    if rc.has("C004", "C005", "C007", "D004"):
        rc.cannot("F010", "the episode rows disagree with the metadata, so frames cannot be assigned to episodes",
                  "fix C004/C005/C007/D004 first, then rerun")
        return
    try:
        files = {vf.relpath: vf for vf in ds.video_files()}
    except DatasetError as exc:
        rc.cannot("F010", exc.message, "fix the episode metadata / video_path first")
        return
    todo: dict[str, set[int]] = {}
    for f in rc.findings("F010"):
        for rel in (f.paths or ([f.path] if f.path else [])):
            todo.setdefault(rel, set())
    if any(f.count > len(f.paths or [f.path]) for f in rc.findings("F010")):  # a grouped finding names 3 paths
        todo = {rel: set() for rel, vf in files.items()
                if any(f.concerns({"video_key": vf.video_key}) for f in rc.findings("F010"))}
    new_cells: dict[int, dict[str, float]] = {}
    changed: dict[str, list[int]] = {}
    for rel in sorted(todo):
        vf = files.get(rel)
        if vf is None:
            continue
        subject = {"video_key": vf.video_key}
        ft, why = _times(ds, rel)
        layout = None
        if ft is not None:
            layout, why = _layout(ds, vf, ft)
        if layout is None:
            rc.cannot("F010", why, "re-encode or re-concatenate the file, or correct the episode metadata by hand",
                      subject)
            continue
        from lerobot_tools.checks.timestamps import query_verdicts

        pts = ft.seconds
        segs = []
        for ep, s, n in layout:
            a = float(pts[s])
            b = float(pts[s + n]) if s + n < ft.count else ft.end_s
            segs.append((ep, a, b, n))
        check = query_verdicts(ft, [(ep, a, n) for ep, a, _, n in segs], ds.fps)
        if check.failed(rc.options.tolerance_s).any():
            rc.cannot("F010", f"{rel}: with segments re-derived from its frames, some frame queries still miss (its "
                      "own frame times are off the grid, F020)", "re-mux the file with frame times k / fps", subject)
            continue
        by_ep = {e.episode_index: e for e in ds.episodes}
        for ep, a, b, _ in segs:
            seg = by_ep[ep].videos[vf.video_key]
            key = f"videos/{vf.video_key}"
            if abs(seg.from_timestamp - a) > 1e-9 or seg.to_timestamp is None or abs(seg.to_timestamp - b) > 1e-9:
                new_cells.setdefault(ep, {}).update({f"{key}/from_timestamp": a, f"{key}/to_timestamp": b})
                changed.setdefault(vf.video_key, []).append(ep)
    if not new_cells:
        return
    for change in _episode_cells(rc, new_cells, ["F010"]):
        rc.file_changes.append(change)
    for key, eps in changed.items():
        rc.repair("F010", f"{key}: from/to_timestamp of {len(eps)} episode(s) re-derived from the frames' timestamps "
                  f"(episodes {_short(eps)})", [c.relpath for c in rc.file_changes if c.relpath.startswith("meta/")],
                  {"video_key": key})


def _short(eps: list[int]) -> str:
    return ", ".join(map(str, eps[:6])) + (f" and {len(eps) - 6} more" if len(eps) > 6 else "")


def _episode_cells(rc: RepairContext, cells_by_ep: dict[int, dict[str, Any]], checks: list[str]) -> list:
    """One cell rewrite per ``meta/episodes`` file holding a changed episode (merged into a rewrite another fix
    already planned for that file)."""
    import pyarrow.parquet as pq

    from lerobot_tools.checks.stats import stored as st
    from lerobot_tools.repair.fixes.stats import StatsCellsRewrite

    reader = st.EpisodeStatsReader(rc.ds)
    for _ in reader:  # index the rows
        pass
    out: dict[str, StatsCellsRewrite] = {}
    existing = {c.relpath: c for c in rc.file_changes if isinstance(c, StatsCellsRewrite)}
    for e, cells in sorted(cells_by_ep.items()):
        loc = reader._rows.get(e)
        if loc is None:
            continue
        rel, _, row = loc
        ch = existing.get(rel) or out.setdefault(rel, StatsCellsRewrite(rel, checks=[]))
        for c in checks:
            if c not in ch.checks:
                ch.checks.append(c)
        old = pq.read_table(rc.ds.root / rel, columns=list(cells)).to_pylist()[row]
        for col, value in cells.items():
            ch.cells.setdefault(row, {})[col] = value
            ch.old.setdefault(row, {})[col] = old.get(col)
        ch.episodes[row] = e
    return [c for c in out.values() if c.cells]


# =========================================================================== D003: the timestamp column
@dataclass
class TimestampColumnRewrite:
    """New ``timestamp`` values for the rows of some episodes of one data parquet file.

    Attributes:
        relpath: the data file.
        values: episode -> float64 ``(length,)`` new timestamps, in row order within the episode.
        old: episode -> the first stored values (for the diff).
        checks: the check IDs this fixes.
    """

    relpath: str
    values: dict[int, np.ndarray] = field(default_factory=dict)
    old: dict[int, list[float]] = field(default_factory=dict)
    checks: list[str] = field(default_factory=list)

    def _new_table(self, t, pos: dict[int, int]):
        import pyarrow as pa

        ep = t.column("episode_index").to_numpy()
        i = t.schema.get_field_index("timestamp")
        col = t.column(i).to_numpy().astype(np.float64)
        for e in np.unique(ep).tolist():
            if e not in self.values:
                continue
            rows = np.flatnonzero(ep == e)
            start = pos.get(e, 0)
            col[rows] = self.values[e][start:start + len(rows)]
        for e in np.unique(ep).tolist():
            pos[e] = pos.get(e, 0) + int((ep == e).sum())
        field_ = t.schema.field(i)
        return t.set_column(i, field_, pa.array(col, type=field_.type))

    def write(self, root: Path) -> None:
        """Rewrite the file atomically: same schema (and key-value metadata), codec and row groups; only the planned
        rows' ``timestamp`` changes. Verified before it replaces the original: every other column equal, the new
        timestamps as planned (in the column's own dtype).

        Raises:
            ValueError, OSError: the rewrite did not verify or could not be written (original untouched).
        """
        import pyarrow.parquet as pq

        from lerobot_tools._io import atomic_path
        from lerobot_tools.dataset.footers import row_group_rows
        from lerobot_tools.repair.parquet import writer_options

        path = Path(root) / self.relpath
        pf = pq.ParquetFile(path)
        schema = pf.schema_arrow
        sizes = row_group_rows(pf.metadata)

        def verify(tmp: Path) -> None:
            new = pq.ParquetFile(tmp)
            if not new.schema_arrow.equals(schema, check_metadata=True) or row_group_rows(new.metadata) != sizes:
                raise ValueError(f"{self.relpath}: the rewritten schema or row groups differ")
            pos: dict[int, int] = {}
            for i in range(pf.num_row_groups):
                a, b = pf.read_row_group(i), new.read_row_group(i)
                others = [n for n in schema.names if n != "timestamp"]
                if not a.select(others).equals(b.select(others)):
                    raise ValueError(f"{self.relpath}: row group {i} changed beyond the timestamp column")
                if not self._new_table(a, pos).column("timestamp").equals(b.column("timestamp")):
                    raise ValueError(f"{self.relpath}: row group {i}'s timestamps do not read back as planned")

        with atomic_path(path, verify=verify) as tmp:
            with pq.ParquetWriter(str(tmp), schema, **writer_options(pf)) as w:
                pos: dict[int, int] = {}
                for i in range(pf.num_row_groups):
                    t = self._new_table(pf.read_row_group(i), pos)
                    w.write_table(t, row_group_size=max(t.num_rows, 1))
        pf.close()

    def summary(self) -> dict[str, Any]:
        """The change as plain data (``lrtool repair --format json``): per episode, the first values before/after."""
        return {"path": self.relpath, "checks": self.checks, "cells": [
            {"episode": e, "row": None, "column": "timestamp", "before": self.old.get(e, [])[:4],
             "after": [round(float(x), 6) for x in v[:4]]} for e, v in sorted(self.values.items())]}


def fix_timestamp_column(rc: RepairContext) -> None:
    """D003: rewrite the ``timestamp`` column of the episodes D003 names from their videos' frame timestamps, when
    every camera holds exactly the episode's frames, evenly spaced at 1 / fps (see the module docstring); the
    episode's ``timestamp`` statistics are recomputed with it. Anything else is left with the reason."""
    ds = rc.ds
    episodes = sorted({f.subject["episode"] for f in rc.findings("D003") if "episode" in f.subject})
    grouped = any("episode" not in f.subject for f in rc.findings("D003"))
    if grouped:  # findings grouped over episodes name none: every episode may be one
        episodes = [e.episode_index for e in ds.episodes]
    refused: list[tuple[int, str]] = []

    def cannot(e: int, why: str) -> None:
        if grouped:
            refused.append((e, why))
        else:
            rc.cannot("D003", why, todo, {"episode": e})

    todo = "check the recording's clock; rewrite timestamp as frame_index / fps by hand if the frames are evenly spaced"
    if not ds.video_keys:
        rc.cannot("D003", "no camera: nothing says when each row's frame was taken", todo)
        return
    if rc.has("C004", "C005", "C007", "D004", "D001", "F007") or rc.bad_data_files:
        rc.cannot("D003", "the episode rows disagree with the metadata, so rows cannot be matched to frames",
                  "fix C005/D001/D004 first, then rerun")
        return
    if any(rc.has(g) for g in ("G003", "G004", "G005", "G006", "G007", "G008", "G010")):
        rc.cannot("D003", "the statistics are being repaired too (they would be recomputed from the old column)",
                  "run `lrtool repair --only G` first, then `lrtool repair --only D003`")
        return
    try:
        vfiles = ds.video_files()
    except DatasetError as exc:
        rc.cannot("D003", exc.message, "fix the episode metadata / video_path first")
        return
    fps, tol = ds.fps, rc.options.tolerance_s
    times: dict[str, Any] = {}
    new: dict[int, np.ndarray] = {}
    for e in episodes:
        per_camera = []
        problem = None
        for vf in (v for v in vfiles if e in v.episodes):
            if vf.relpath not in times:
                ft, why = _times(ds, vf.relpath)
                layout = None
                if ft is not None:
                    layout, why = _layout(ds, vf, ft)
                times[vf.relpath] = (ft, layout, why)
            ft, layout, why = times[vf.relpath]
            if layout is None:
                problem = why
                break
            _, s, n = next(x for x in layout if x[0] == e)
            rel_t = ft.seconds[s:s + n] - ft.seconds[s]
            if np.abs(rel_t - np.arange(n) / fps).max(initial=0.0) > tol:
                problem = (f"{vf.relpath}: episode {e}'s frames are not evenly spaced at 1/{fps:g} s (their own times "
                           "are off the grid): rewriting the column would not make it frame_index / fps")
                break
            per_camera.append(rel_t)
        if problem is None and not per_camera:
            problem = f"episode {e} has no video file"
        if problem is not None:
            cannot(e, problem)
            continue
        new[e] = per_camera[0]
    if refused:
        e, why = refused[0]
        more = f" (and {len(refused) - 1} more episode(s))" if len(refused) > 1 else ""
        done = f"; episodes {_short(sorted(new))} are rewritten" if new else ""
        rc.cannot("D003", f"episode {e}: {why}{more}{done}", todo)
    if not new:
        return
    by_file: dict[str, TimestampColumnRewrite] = {}
    by_ep = {e.episode_index: e for e in ds.episodes}
    import pyarrow.parquet as pq

    for df in rc.data_files:
        mine = [e for e in df.episodes if e in new]
        if not mine:
            continue
        ch = by_file.setdefault(df.relpath, TimestampColumnRewrite(df.relpath, checks=["D003"]))
        t = pq.read_table(ds.path(df.relpath), columns=["episode_index", "timestamp"])
        ep_col = t.column("episode_index").to_numpy()
        ts_col = t.column("timestamp").to_numpy()
        for e in mine:
            rows = ts_col[ep_col == e]
            if len(rows) != len(new[e]) or by_ep[e].length != len(rows):
                rc.cannot("D003", f"episode {e} has {len(rows)} rows in {df.relpath} for {len(new[e])} frames", todo,
                          None if grouped else {"episode": e})
                new.pop(e)
                continue
            ch.values[e] = new[e]
            ch.old[e] = [round(float(x), 6) for x in rows[:4]]
    changes = [c for c in by_file.values() if c.values]
    if not changes:
        return
    rc.file_changes.extend(changes)
    stats_files = _timestamp_stats(rc, {e: v for c in changes for e, v in c.values.items()})
    files = [c.relpath for c in changes] + stats_files
    what = ("timestamp rewritten from its videos' frame timestamps (frame_index / fps, one frame per row at a "
            "constant rate); its timestamp statistics recomputed")
    if grouped:
        rc.repair("D003", f"episodes {_short(sorted(new))}: {what}", files)
        return
    for e in sorted(new):
        rc.repair("D003", f"episode {e}: {what}", files, {"episode": e})


def _timestamp_stats(rc: RepairContext, values: dict[int, np.ndarray]) -> list[str]:
    """Plan the ``timestamp`` statistics of the rewritten episodes (per episode, and ``stats.json``'s aggregate),
    computed as lerobot 0.4.4's ``compute_stats`` does; return the files changed."""
    import json

    from lerobot_tools.checks.stats import stored as st
    from lerobot_tools.checks.stats.compute import RunningAggregate, episode_stats
    from lerobot_tools.repair.fixes.stats import jsonl_change, parquet_changes, _plain
    from lerobot_tools.repair.model import TextChange, dump_like

    ds = rc.ds
    reader = st.EpisodeStatsReader(ds)
    rows = {row.episode_index: row for row in reader}
    replaced: dict[int, dict[str, dict]] = {}
    agg = RunningAggregate()
    for e, row in rows.items():
        raw = row.stats.get("timestamp")
        if not isinstance(raw, dict):
            continue
        if e in values:
            qs = [q for q in st.QUANTILES if q in raw]
            shape = np.asarray(raw.get("mean")).shape or (1,)
            entry = episode_stats(np.asarray(values[e], dtype=np.float64).reshape(-1, *shape[1:] or (1,)), shape, qs)
            plain = _plain(entry, False)
            replaced[e] = {"timestamp": {k: plain[k] if k in plain else v for k, v in raw.items()}}
            agg.add(entry)
        else:
            parsed, _ = st.parse_feature_stats(raw)
            agg.add(parsed)
    files: list[str] = []
    if replaced:
        changes = [jsonl_change(ds, replaced, ["D003"])] if reader.kind == "jsonl" else \
            parquet_changes(ds, reader, replaced, ["D003"])
        for c in changes:
            existing = next((x for x in rc.file_changes if getattr(x, "relpath", None) == c.relpath
                             and hasattr(x, "cells")), None)
            if existing is not None and hasattr(c, "cells"):
                for r, cells in c.cells.items():
                    existing.cells.setdefault(r, {}).update(cells)
                    existing.old.setdefault(r, {}).update(c.old.get(r, {}))
                    existing.episodes[r] = c.episodes[r]
                existing.checks = sorted(set(existing.checks) | {"D003"})
            else:
                rc.file_changes.append(c)
            files.append(c.relpath)
    gstats = st.read_global(ds)
    res = agg.result() if replaced else None
    if gstats is not None and isinstance(gstats.get("timestamp"), dict) and res is not None:
        # the whole entry re-aggregated (lerobot's aggregate_stats), every statistic it stores, in its order
        raw = gstats["timestamp"]
        plain = _plain({k: np.asarray(v).reshape(np.asarray(raw[k]).shape) if k in raw and k != "count" else v
                        for k, v in res.items()}, False)
        new_global = dict(gstats)
        new_global["timestamp"] = {k: plain.get(k, v) for k, v in raw.items()}
        if new_global["timestamp"] != raw:
            old_text = (ds.root / STATS_PATH).read_text(encoding="utf-8")
            expected = json.loads(json.dumps(new_global))

            def verify(text: str, expected=expected) -> None:
                if json.loads(text) != expected:
                    raise ValueError(f"{STATS_PATH} does not read back as planned")

            rc.file_changes.append(TextChange(STATS_PATH, old_text, dump_like(old_text, new_global), ["D003"], verify))
            files.append(STATS_PATH)
    return files
