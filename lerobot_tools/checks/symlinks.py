"""F013: a folder or file of the dataset is a symlink that leads outside the dataset.

The loaders open paths and follow links, so the dataset loads from wherever the link points, and validate
checks the referenced files there too. But what lives there is not this dataset's alone (another dataset's
``data/``, another disk), so lrtool does not write through it (``repair``, ``repair --undo`` and ``reshard``
refuse the dataset, :func:`lerobot_tools._contain.refuse_escaping_symlinks`) and does not walk it looking for
orphan files (a ``videos/`` linked to ``/`` would be the whole file system). Links into the repository folder
of a Hub snapshot (its ``blobs/``) stay inside: see :func:`lerobot_tools._contain.containment_root`.
"""

from __future__ import annotations

from lerobot_tools._contain import escaping_symlinks
from lerobot_tools.checks.context import CheckContext
from lerobot_tools.dataset.placeholders import file_kind_of, folder_of

#: at most this many links out are looked for (a dataset made of links to another one has one per file)
MAX_REPORTED = 10_000


def run(ctx: CheckContext) -> None:
    """Emit F013 for every symlink below the dataset root that resolves outside it (grouped per folder).

    Reads ``ctx.dataset``; sets nothing.
    """
    if not ctx.enabled("F013"):
        return
    found = escaping_symlinks(ctx.dataset.root, limit=MAX_REPORTED)
    for e in found:
        kind = "folder" if e.is_dir else "file"
        folder = folder_of(e.relpath)
        # links at the root (data/, videos/, meta/) are few and each its own finding; links below a folder (one per
        # file of a dataset made of links) are grouped per folder
        group = None if folder == "." else f"symlinks under {folder}/ lead outside the dataset"
        ctx.emit("F013", f"{kind} is a symlink to {e.target}, outside the dataset: loaders read through it, lrtool "
                 "does not write through it (repair and reshard refuse the dataset) nor look there for unreferenced "
                 "files", e.relpath, group=group, file_kind=file_kind_of(e.relpath))
    if len(found) >= MAX_REPORTED:
        ctx.skip("F013 (other symlinks)", f"only the first {MAX_REPORTED:,} symlinks out of the dataset are listed")
