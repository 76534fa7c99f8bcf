"""Scale-out: run a command's per-dataset and per-file work as many tasks, then merge the parts.

- :mod:`~lerobot_tools.distributed.partition`: work items (datasets; the files of a large dataset) dealt
  to WORLD tasks, balanced by bytes, deterministic.
- :mod:`~lerobot_tools.distributed.plan`: the run folder's ``plan.json``, written once per run.
- :mod:`~lerobot_tools.distributed.parts`: run one task's share into a part result; merge the parts into
  exactly the result (and exit status) of the single-process command.
- :mod:`~lerobot_tools.distributed.jobs`: per-command adapters (``validate_job``, ...).
- :mod:`~lerobot_tools.distributed.engine`: datatrove ``PipelineStep``s and the local, SLURM and Ray
  executors (needs the ``distributed`` extra; Ray also the ``ray`` extra).
- :mod:`~lerobot_tools.distributed.rundir`: progress of a run folder, bounded waiting, the merged report.

Nothing here imports datatrove or ray except :mod:`~lerobot_tools.distributed.engine`.
"""
