"""The hooks :mod:`lerobot_tools.checks.deep` calls for family Q, so the content checks share its one read.

``start`` plans the request from the first readable data file's schema, ``add`` collects each file's episode
summaries, ``finish`` drops the episodes whose rows are split (D004 reports them) and judges the rest
(:mod:`.decide`). Without ``--deep`` (or without readable data) the family is listed as not checked, except on a
copy whose data has not been downloaded yet, where :mod:`.meta` judges what the stored statistics allow.
"""

from __future__ import annotations

from lerobot_tools.checks.content.decide import judge, short_episodes
from lerobot_tools.checks.content.episode import EpisodeSummary
from lerobot_tools.checks.content.plan import ContentPlan, plan_for
from lerobot_tools.checks.context import CheckContext

#: the content checks computed from the data (``--deep``)
DATA_CHECKS = "Q001-Q009 (episode content)"


def enabled(ctx: CheckContext) -> bool:
    """The content checks are asked for: ``ctx.options.content`` is set and some Q check is selected."""
    return getattr(ctx.options, "content", None) is not None and ctx.family_enabled("Q")


def not_deep(ctx: CheckContext, reason: str = "--deep not given (the data columns are not read)") -> None:
    """Say why the content checks did not run (Q008 needs only the metadata, but the family is one pass: it
    runs with the others, so that a default validate says the same as before it existed). On a copy whose data
    is not downloaded yet, judge what the stored statistics allow instead (:mod:`.meta`)."""
    if not enabled(ctx):
        return
    if ctx.download is not None and ctx.episodes_ok:
        pending = _pending(ctx)
        _from_statistics(ctx, pending)
        if len(pending) < len(ctx.dataset.episode_indices):
            ctx.skip(DATA_CHECKS + " for the downloaded episodes", reason)
        return
    ctx.skip(DATA_CHECKS, reason)


def _pending(ctx: CheckContext) -> set[int]:
    """Episodes whose data file is absent because the copy has not downloaded it yet."""
    if not ctx.data_files:
        return {e for e in ctx.dataset.episode_indices if not ctx.download.downloaded([e])}
    return {e for df in ctx.data_files if df.relpath in ctx.bad_data_files and ctx.not_downloaded(df.episodes)
            for e in df.episodes}


def _from_statistics(ctx: CheckContext, episodes: set[int]) -> None:
    """The meta tier for ``episodes`` (not downloaded), and what it cannot see."""
    from lerobot_tools.checks.content.meta import judge_stats

    if not episodes:
        return
    judge_stats(ctx, episodes)
    ctx.skip("Q002, Q003, Q005-Q007, Q009, Q013 for episodes not downloaded",
             f"{len(episodes)} episode(s) judged from their stored statistics only (Q001, Q004, Q008, Q011, Q012, "
             "Q014): the others need the data")


def _lengths(ctx: CheckContext) -> dict[int, int]:
    return {e.episode_index: e.length for e in ctx.dataset.episodes if e.length is not None}


class ContentRun:
    """One dataset's content checks during the deep pass."""

    def __init__(self, plan: ContentPlan):
        self.plan = plan
        self.request = plan.request
        self.summaries: list[EpisodeSummary] = []
        self.missing_files = 0
        self.frozen: set[int] = set()
        self.too_long: list[int] = []
        self.unusable: set[str] = set()

    def add(self, summaries: list[EpisodeSummary] | None, too_long: list[int] = (), unusable: list[str] = ()) -> None:
        """One data file's summaries (None: the file's scan carried none, e.g. a replayed scan without them), the
        episodes it could not summarise within the memory bound and the features whose rows were unusable."""
        self.too_long.extend(too_long)
        self.unusable.update(unusable)
        if summaries is None:
            self.missing_files += 1
            return
        self.summaries.extend(summaries)

    def finish(self, ctx: CheckContext) -> None:
        """Judge the episodes (Q001-Q007, Q009), Q008 from the metadata lengths, and note what was not read."""
        opts = ctx.options.content
        seen: dict[int, int] = {}
        for s in self.summaries:
            seen[s.episode] = seen.get(s.episode, 0) + 1
        split = {e for e, c in seen.items() if c > 1}
        kept = [s for s in self.summaries if s.episode not in split]
        if self.too_long:
            from lerobot_tools.checks.content.episode import MAX_EPISODE_VALUES

            ctx.skip("Q001-Q007, Q009 for very long episodes",
                     f"{len(self.too_long)} episode(s) (first: {self.too_long[0]}) hold more than "
                     f"{MAX_EPISODE_VALUES:,} action/state values, the bound on memory per episode")
        if split:
            ctx.skip("Q001-Q009 for episodes whose rows are not contiguous",
                     f"{len(split)} episode(s) appear in more than one run of rows (D004)")
        files = {df.relpath: df for df in ctx.data_files}
        unread = {f for f in ctx.bad_data_files if f not in files or not ctx.not_downloaded(files[f].episodes)}
        if unread or self.missing_files:
            ctx.skip("Q001-Q009 for the episodes of unreadable data files",
                     f"{len(unread) + self.missing_files} data file(s) could not be read")
        if self.unusable:
            ctx.skip("Q001-Q009 for " + ", ".join(sorted(self.unusable)),
                     "rows do not all hold the declared number of values (D005/S004)")
        self.frozen = judge(ctx, self.plan, kept, opts, ctx.curation, self.unusable)
        lengths = _lengths(ctx)
        if ctx.download is not None:
            pending = _pending(ctx)
            _from_statistics(ctx, pending)  # Q008 for them comes from there
            lengths = {e: n for e, n in lengths.items() if e not in pending}
        short_episodes(ctx, lengths, opts.chunk_size)


def cameras(ctx: CheckContext, run: ContentRun | None) -> None:
    """Q011-Q014 after the deep pass (``--camera-frames``), when the family is asked for."""
    if not enabled(ctx) or not ctx.episodes_ok:
        return
    from lerobot_tools.checks.content.camera import judge_cameras

    judge_cameras(ctx, getattr(ctx.options, "camera_frames", 0), run.frozen if run is not None else set())


def start(ctx: CheckContext, footer) -> ContentRun | None:
    """The content run for this dataset (``footer``: the first readable data file's), or None when the family
    is not asked for or the data has no action/state column (said in the report)."""
    if not enabled(ctx):
        return None
    if footer is None:
        not_deep(ctx, "no readable data file")
        return None
    plan = plan_for(ctx.dataset, footer.schema, ctx.options.content)
    if plan is None:
        ctx.skip("Q001-Q007, Q009 (episode content)", "the data has no numeric action or observation column of "
                 "shape [d]")
        short_episodes(ctx, _lengths(ctx), ctx.options.content.chunk_size)
        return None
    return ContentRun(plan)
