"""Family G: the stored normalisation statistics (``meta/stats.json``, v2.1 ``meta/episodes_stats.jsonl``, v3.0
``stats/<feature>/<stat>`` columns of ``meta/episodes/*.parquet``).

* :mod:`.stored` — where each layout keeps the statistics, what lerobot writes, streaming readers;
* :mod:`.blocks` — the per-episode statistics as arrays, streamed in blocks of episodes and looked up again;
* :mod:`.compute` — the statistics computed the way lerobot computes and aggregates them (float64), and the
  tolerances stored values are held to;
* :mod:`.meta` — the always-on checks G001-G009 (metadata only);
* :mod:`.deep` — G010 (``--deep``): per-episode statistics recomputed from the data in the deep pass's
  single streaming read, compared with the stored ones.

Imports point down: :mod:`.meta` and :mod:`.deep` import :mod:`.blocks`, :mod:`.stored` and :mod:`.compute`;
:mod:`.blocks` imports :mod:`.stored`; the engine imports
:func:`run`; :mod:`lerobot_tools.checks.deep` imports :mod:`.deep`.
"""

from lerobot_tools.checks.stats.meta import StatsFacts, run

__all__ = ["StatsFacts", "run"]
