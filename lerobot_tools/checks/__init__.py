"""The check catalogue and the families that implement it.

* :mod:`.catalogue` — every check's stable ID, severity, one-line title and documentation.
* :mod:`.engine` — runs the families over one target (:func:`validate_target`).
* one module per family: :mod:`.info`, :mod:`.schema`, :mod:`.tasks`, :mod:`.counts`, :mod:`.files`,
  :mod:`.videos`, :mod:`.rowgroups`, :mod:`.stats`, :mod:`.deep`, :mod:`.targets`.
"""
