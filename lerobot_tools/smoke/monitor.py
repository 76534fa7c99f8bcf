"""Peak RSS of the whole process tree (DataLoader workers included), sampled by a psutil thread."""

from __future__ import annotations

import threading


class RssMonitor:
    """Samples the memory of this process and all its descendants (DataLoader workers) in a thread.

    ``peak`` is the largest RSS sum seen (bytes) since entering, ``section_peak`` since the last
    :meth:`reset`. RSS counts pages shared between a parent and its forked workers once per process, so
    the sum over-counts them; ``peak_pss`` / ``section_peak_pss`` (proportional set size, Linux
    ``smaps_rollup``; None elsewhere) share them out and add up to what the tree really holds.
    """

    def __init__(self, interval_s: float = 0.02):
        import psutil

        self._proc = psutil.Process()
        self._psutil = psutil
        self.interval_s = interval_s
        self.peak = self.section_peak = 0
        self.peak_pss: int | None = None
        self.section_peak_pss: int | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lrtool-rss", daemon=True)

    def sample(self) -> tuple[int, int | None]:
        """``(rss, pss)`` in bytes of this process plus its descendants right now (pss None if unknown)."""
        rss, pss = 0, 0
        procs = [self._proc]
        try:
            procs += self._proc.children(recursive=True)
        except self._psutil.Error:
            pass
        for p in procs:
            try:
                full = p.memory_full_info()
            except (self._psutil.Error, AttributeError, NotImplementedError):
                try:
                    rss += p.memory_info().rss
                except self._psutil.Error:
                    pass
                pss = None
                continue
            rss += full.rss
            if pss is not None and getattr(full, "pss", None) is not None:
                pss += full.pss
            else:
                pss = None
        return rss, pss

    def _record(self) -> None:
        rss, pss = self.sample()
        self.peak = max(self.peak, rss)
        self.section_peak = max(self.section_peak, rss)
        if pss is not None:
            self.peak_pss = max(self.peak_pss or 0, pss)
            self.section_peak_pss = max(self.section_peak_pss or 0, pss)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._record()
            self._stop.wait(self.interval_s)

    def reset(self) -> None:
        """Start a new section: the section peaks restart from the current values (``peak`` keeps the maximum)."""
        self.section_peak, self.section_peak_pss = 0, None
        self._record()

    def __enter__(self) -> "RssMonitor":
        self._record()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._record()
