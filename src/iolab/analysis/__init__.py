"""Statistics over stored results. Pure: no I/O."""
