"""Family L: what a dataset's metadata says before its data is downloaded: the episode ledger and the licence.

* **L001** (v3.0): ``meta/episodes`` places each episode in a data file (``data/chunk_index``, ``data/file_index``)
  and a video file per camera. lerobot's writers fill files in episode order, so along the episodes the file
  number (``chunk * chunks_size + file``) never goes back (a skipped number is harmless: loaders glob the files).
  With a data file's footer on disk,
  its row count must equal the lengths of the episodes placed in it; when the files disagree in exactly the way
  lerobot's v2.1->v3.0 converter got wrong before 0d1be72dc (huggingface/lerobot#2401: the episode that starts a
  new file is recorded in the file before, so every file but the last holds its first episode's rows instead of
  the rows of its last), that cause is named once. Row counts per file are C005's; L001 names the cause.
* **L002**: the dataset card (``README.md``, YAML front matter, the Hub's "Dataset Cards" format) states a
  ``license:``; read from at most :data:`MAX_CARD_BYTES` (the front matter comes first). A licence file beside
  the card (:data:`LICENSE_FILES`, how a dataset kept in a git repository states its terms) also states them:
  no L002 then (its text is not read, so it takes no part in L003).

Both read only ``meta/`` and ``README.md``, so they run on a copy made by ``lrtool prefetch --meta-only``.
"""

from __future__ import annotations

from lerobot_tools.checks.context import CheckContext

MAX_CARD_BYTES = 1 << 20
LICENSE_FILES = ("license", "license.md", "license.txt", "licence", "licence.md", "licence.txt", "copying")


def run(ctx: CheckContext) -> None:
    """Family L (dataset side): L001 and L002. Reads ``ctx.episodes_ok`` and ``ctx.footers``; records the licence in
    ``ctx.curation.license`` for the mixture-wide L003."""
    ds = ctx.dataset
    license_id = card_license(ds.root)
    ctx.curation.license = license_id
    if ((ds.root / "README.md").is_file() and license_id in (None, "", "other", "unknown")
            and not has_license_file(ds.root)):
        ctx.emit("L002", "the dataset card states no license" if not license_id else
                 f"the dataset card's license is {license_id!r}", "README.md", key="license")
    if ds.layout == "v3" and ctx.episodes_ok:
        _ledger(ctx)


def has_license_file(root) -> bool:
    """Whether a regular file named like :data:`LICENSE_FILES` (any case) sits in the dataset's root folder."""
    try:
        return any(p.name.lower() in LICENSE_FILES and p.is_file() and not p.is_symlink() for p in root.iterdir())
    except OSError:
        return False


def card_license(root) -> str | None:
    """The ``license:`` of the card's YAML front matter (the first of a list), None when absent or unreadable."""
    path = root / "README.md"
    try:
        with open(path, "rb") as fh:
            head = fh.read(MAX_CARD_BYTES)
    except OSError:
        return None
    text = head.decode("utf-8", errors="replace")
    if not text.startswith("---"):
        return None
    end = text.find("\n---", 3)
    if end < 0:
        return None
    try:
        import yaml

        front = yaml.safe_load(text[3:end])
    except Exception:
        return None
    lic = front.get("license") if isinstance(front, dict) else None
    if isinstance(lic, list):
        lic = lic[0] if lic else None
    return str(lic).strip() if isinstance(lic, (str, int, float)) else None


def _ledger(ctx: CheckContext) -> None:
    ds = ctx.dataset
    eps = ds.episodes
    size = ds.chunks_size or 1000
    prev = None
    for e in eps:
        if e.data_chunk is None or e.data_file is None:
            continue
        num = e.data_chunk * size + e.data_file
        if prev is not None and num < prev[1]:
            ctx.emit("L001", f"episode {e.episode_index} is placed in data chunk {e.data_chunk} file {e.data_file}, "
                     f"before the file of episode {prev[0]}: the ledger goes back", e.source,
                     group="the episode ledger's data file order goes back", episode=e.episode_index)
        prev = (e.episode_index, num)
    _converter_signature(ctx)


def _converter_signature(ctx: CheckContext) -> None:
    """The huggingface/lerobot#2401 signature in the footers on disk (see module docstring)."""
    ds = ctx.dataset
    by_ep = {e.episode_index: e for e in ds.episodes}
    files = [df for df in ctx.data_files]
    # data files found by the loader's glob behind a template that cannot name them (F001's note) carry no
    # episode list: nothing ties their rows to the ledger
    if len(files) < 2 or any(not df.episodes for df in files) or any(by_ep.get(i) is None or by_ep[i].length is None for df in files for i in df.episodes):
        return
    claimed = [sum(by_ep[i].length for i in df.episodes) for df in files]
    last = [by_ep[max(df.episodes)].length for df in files]
    seen, mismatch, shifted, orphan_last = 0, 0, 0, False
    for k, df in enumerate(files):
        footer = ctx.footers.get(df.relpath)
        if footer is None:
            continue
        seen += 1
        rows = footer.num_rows
        if rows == claimed[k]:
            continue
        mismatch += 1
        expect = claimed[k] - last[k] + (last[k - 1] if k > 0 else 0)
        # every file lost its last recorded episode to the next and holds the previous file's; the ledger's last
        # file keeps its last episode, unless the real last file held a single episode (then no episode refers to
        # that file: it is an orphan, and this one lost its last episode like the others)
        if k == len(files) - 1 and rows == expect + last[k]:
            shifted += 1
        elif rows == expect:
            shifted += 1
            orphan_last = orphan_last or k == len(files) - 1
    if mismatch and shifted == mismatch and mismatch >= min(2, seen):
        boundary = [max(df.episodes) for df in (files if orphan_last else files[:-1])]
        shown = ", ".join(map(str, boundary[:6])) + (" ..." if len(boundary) > 6 else "")
        ctx.emit("L001", f"the row counts of {mismatch} data file(s) match lerobot's v2.1->v3.0 converter bug "
                 f"(huggingface/lerobot#2401): episode(s) {shown} start the next data file but are recorded in the "
                 "one before", files[0].relpath, file_kind="episodes")
