"""The text report of a :class:`~lerobot_tools.reencode.model.ReencodeRun`: per dataset one line per outcome with its
count (a dataset of 1,000 files fits a screen), the first files of each, failures with their reason, then a
summary."""

from __future__ import annotations

from typing import IO, Any

#: files named per outcome before "and N more"
SHOWN = 3


def _dur(s: float) -> str:
    if s < 90:
        return f"{s:.1f} s"
    if s < 5400:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"


def render_text(run: Any, out: IO[str]) -> None:
    from lerobot_tools.sniff import human_size

    dry = run.options.dry_run
    opts = run.options
    out.write(f"re-encode to {opts.codec} with {run.encoder or '?'}" + (" (dry run: nothing written)" if dry else "")
              + "\n")
    for note in run.notes:
        out.write(f"  note: {note}\n")
    for d in run.datasets:
        out.write(d.target + (f" ({d.codebase_version})" if d.codebase_version else "") + "\n")
        if d.error:
            out.write(f"  failed: {d.error}\n")
        for note in d.notes:
            out.write(f"  note: {note}\n")
        groups: dict[str, list] = {}
        for f in d.files:
            groups.setdefault(f.status, []).append(f)
        for status, label in (("reencoded", "re-encoded"), ("planned", "would re-encode"), ("skipped", "skipped"),
                              ("failed", "FAILED")):
            fs = groups.get(status, [])
            if not fs:
                continue
            frames = sum(f.frames for f in fs)
            extra = ""
            if status == "reencoded":
                before, after = sum(f.bytes_before for f in fs), sum(f.bytes_after for f in fs)
                psnr = min((f.min_psnr for f in fs if f.min_psnr is not None), default=None)
                extra = (f", {human_size(before)} -> {human_size(after)}"
                         + (f", lowest sampled PSNR {psnr:.1f} dB" if psnr is not None else "")
                         + ", every frame time kept")
            out.write(f"  {label:<16} {len(fs)} file(s), {frames} frame(s){extra}\n")
            if status in ("failed", "skipped"):
                reasons: dict[str, list] = {}
                for f in fs:
                    reasons.setdefault(f.reason or "", []).append(f)
                for why, same in list(reasons.items())[:SHOWN if status == "skipped" else len(reasons)]:
                    names = ", ".join(f.relpath for f in same[:SHOWN]) + (
                        f" and {len(same) - SHOWN} more" if len(same) > SHOWN else "")
                    out.write(f"    {names}: {why}\n")
            elif status == "planned":
                out.write(f"    {', '.join(f.relpath for f in fs[:SHOWN])}"
                          f"{f' and {len(fs) - SHOWN} more' if len(fs) > SHOWN else ''}\n")
        if d.info_updated:
            out.write(f"  meta/info.json: video.codec/video.pix_fmt of {', '.join(d.info_updated)} updated (every file "
                      "of the camera done)\n")
        backups = [f.backup for f in d.files if f.backup]
        if backups:
            out.write(f"  originals kept under .lrtool/reencode/ (undo: lrtool reencode --undo {d.target})\n")
    files = run.files()
    planned = sum(f.frames for f in files if f.status in ("planned", "reencoded"))
    tail = ""
    if dry and run.measured_fps:
        tail = (f"; measured {run.measured_fps:.0f} frames/s here (encode + verify, a sample), estimated "
                f"{_dur(run.estimate_s or 0)}")
    n = {s: sum(1 for f in files if f.status == s) for s in ("reencoded", "planned", "skipped", "failed")}
    done = f"{n['planned']} to re-encode" if dry else f"{n['reencoded']} re-encoded"
    out.write(f"\nSummary: {len(run.datasets)} dataset(s), {len(files)} video file(s): {done}, {n['skipped']} skipped, "
              f"{n['failed']} failed; {planned} frame(s){tail}; {run.seconds:.1f} s\n")
