"""The SQLite results database."""

from iolab.store.database import RunRecord, Store, default_path, open_readonly, open_store

__all__ = ["RunRecord", "Store", "default_path", "open_readonly", "open_store"]
