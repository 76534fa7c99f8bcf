"""The check catalogue and the families that implement it.

* :mod:`.catalogue` — every check's stable ID, severity, one-line title and documentation.
* :mod:`.context` — :class:`ValidateOptions`, the :class:`CheckContext` the families share, :class:`StopChecks`.
* :mod:`.engine` — runs the families over one target (:func:`validate_target`).
* one module per family: :mod:`.info`, :mod:`.schema`, :mod:`.tasks`, :mod:`.counts`, :mod:`.files`,
  :mod:`.videos`, :mod:`.rowgroups`, :mod:`.stats`, :mod:`.deep`, :mod:`.targets`.

Imports point one way: the families import :mod:`.context` (and :mod:`.catalogue` through it), the engine
imports the families and :mod:`.context`; nothing here imports the engine. Findings and severities come
from :mod:`lerobot_tools.findings`, below the catalogue.
"""
