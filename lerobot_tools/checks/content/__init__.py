"""Family Q: what the episodes hold, judged for training (frozen, idle, spikes, NaN, clipping, lag, short,
duplicate episodes, and sampled camera frames), computed in ``--deep``'s one streaming read of the data.

Modules: :mod:`.options` (thresholds and their evidence), :mod:`.plan` (which columns, their roles), :mod:`.episode`
(stage 1: one episode summarised while the deep pass streams), :mod:`.signature` (duplicate signatures and search),
:mod:`.decide` (stage 2: the summaries judged against the dataset), :mod:`.run` (the hooks the deep pass calls),
:mod:`.facts` (what the keep-list writer reads), :mod:`.camera` (sampled video frames), :mod:`.meta` (what the
stored per-episode statistics allow on a copy whose data is not downloaded). docs/curation.md describes them.
"""
