"""A disk profile (``iolab disk``): CrystalDiskMark- and SQLIO-style tests through fio.

``options.py`` its options model, ``workload.py`` what the runner calls, ``run.py`` the profiles
and the measuring loop, ``metrics.py`` the numbers it records."""
