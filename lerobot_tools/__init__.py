"""lrtool: offline-first checks and repairs for LeRobot datasets and mixtures.

The package is a library first: every command of the ``lrtool`` CLI is a thin layer over public
functions in these modules. Importing the package is cheap; heavy dependencies (pyarrow, PyAV,
torch, torchcodec, datasets) are imported only by the modules that need them.
"""

__version__ = "0.1.0"
