"""Video files: header-only probing (MP4 box walk, PyAV header) for the files checks and diagnose-decode."""
