"""TPC-H data: generated once per scale factor with ``tpchgen-cli`` and kept in a cache.

The cache is ``$IOLAB_CACHE/tpch`` (default ``$XDG_CACHE_HOME/iolab/tpch``, i.e.
``~/.cache/iolab/tpch``), one directory per scale factor: ``sf1``, ``sf0.01``, ... holding one
CSV file per table (with a header line) and ``manifest.json`` (generator version, rows, bytes
and SHA-256 per table, the checksums computed while the rows are counted). A scale factor is
generated into an iolab-owned directory beside it and renamed into place only when complete, so
an interrupted generation never looks like data; a later run removes the leftovers of a
generation whose process is gone. The cache is trusted, and the files checked against their
manifest before each load, as :mod:`iolab.workloads.cache` says.

Free space is estimated before generating (:data:`BYTES_PER_SF`: 1.15 GB of CSV per
scale-factor unit) and a cache without room for it is refused.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

from iolab.errors import BadInput, MissingTool, RunFailed
from iolab.events import EventSink, Phase, Warning
from iolab.ownership import owned_name, reap, remove
from iolab.process import run
from iolab.units import format_bytes
from iolab.workloads import cache
from iolab.workloads.cache import CACHE_ENV, free_bytes
from iolab.workloads.tpch.dialect import TABLES, TpchFiles

KIND_GENERATING = "tpchgen"
MANIFEST = cache.MANIFEST
ANSWERS_FILE = "answers.json"  # the reference answers, computed once (answers.py)
ANSWERS_TMP = "answers.tmp"
# CSV bytes per scale-factor unit: 1.07 GB measured at SF 0.01, 1.11 GB at SF 1; rounded up.
BYTES_PER_SF = 1.15e9
HEADROOM_BYTES = 64 * 2**20  # the small tables, the manifest, the filesystem's own needs
GENERATE_TIMEOUT_PER_SF = 3600.0  # seconds; a generation that takes longer is stuck
OWN_FILES = (ANSWERS_FILE, ANSWERS_TMP)  # what iolab writes beside the data
HOW_TO_GET = "pip install tpchgen-cli (or pip install 'iolab[engines]')"


def cache_root() -> Path:
    """Where generated data is kept: ``$IOLAB_CACHE/tpch`` or ``~/.cache/iolab/tpch``."""
    return cache.cache_root("tpch")


def sf_label(scale_factor: float) -> str:
    """``1`` for 1.0, ``0.01`` for 0.01: the scale factor as people write it."""
    text = format(Decimal(repr(float(scale_factor))).normalize(), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def data_dir(scale_factor: float, root: Path | None = None) -> Path:
    return (root or cache_root()) / f"sf{sf_label(scale_factor)}"


def estimated_bytes(scale_factor: float) -> int:
    return int(BYTES_PER_SF * scale_factor) + HEADROOM_BYTES


def tpchgen_binary() -> str:
    """``tpchgen-cli`` beside this Python (a virtual environment's bin) or on PATH."""
    beside = Path(sys.executable).parent / "tpchgen-cli"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("tpchgen-cli")
    if found is None:
        raise MissingTool("tpchgen-cli (the TPC-H data generator)", HOW_TO_GET)
    return found


def _current(doc: Mapping[str, Any]) -> bool:
    return "generator" in doc


def cached(scale_factor: float, root: Path | None = None) -> TpchFiles | None:
    """The data of ``scale_factor`` in the cache when its files are all there at the sizes its
    manifest says (their checksums are checked by :func:`ensure`); None otherwise."""
    directory = data_dir(scale_factor, root)
    doc = cache.data_set(directory, TABLES, _current)
    if doc is None or cache.differs(directory, doc, TABLES, checksums=False) is not None:
        return None
    return TpchFiles(scale_factor, directory)


def manifest(files: TpchFiles) -> dict[str, object]:
    return cache.manifest(files.directory)


def expected_rows(files: TpchFiles) -> dict[str, int]:
    rows = manifest(files).get("rows", {})
    assert isinstance(rows, dict)
    return {str(k): int(v) for k, v in rows.items()}


def check_cache(root: Path | None = None) -> None:
    """Refuse, before a run is recorded, a cache directory iolab cannot create or write."""
    cache.check_cache(root or cache_root(), "TPC-H")


def check_space(scale_factor: float, root: Path | None = None) -> None:
    """Refuse a scale factor whose data the cache's filesystem has no room for."""
    root = root or cache_root()
    need = estimated_bytes(scale_factor)
    free = free_bytes(root)
    if free < need:
        raise BadInput(
            "--sf",
            scale_factor,
            f"its data needs about {format_bytes(need)} in {root}, which has "
            f"{format_bytes(free)} free; choose a smaller scale factor, free some space, or set "
            f"{CACHE_ENV} to a directory on a larger filesystem",
        )


def ensure(scale_factor: float, events: EventSink, root: Path | None = None) -> TpchFiles:
    """The data of ``scale_factor``: from the cache once its files match their manifest's
    sizes and checksums, else generated into it first (data that do not match are removed
    first, saying so)."""
    root = root or cache_root()
    directory = data_dir(scale_factor, root)
    label = f"TPC-H data at SF {sf_label(scale_factor)}"
    doc = cache.data_set(directory, TABLES, _current)
    if doc is not None:
        why = cache.differs(directory, doc, TABLES, checksums=True)
        if why is None:
            events(
                Phase(f"using cached {label} ({directory}, checked against its manifest's SHA-256)")
            )
            return TpchFiles(scale_factor, directory)
        cache.discard(directory, TABLES, OWN_FILES, why)
        events(
            Warning(
                f"the cached {label} in {directory} are not what iolab generated ({why}): "
                "removed them; generating them again"
            )
        )
    check_cache(root)
    check_space(scale_factor, root)
    binary = tpchgen_binary()
    try:
        root.mkdir(mode=0o755, parents=True, exist_ok=True)
    except OSError as exc:
        raise cache.unusable(root, "TPC-H", f"it cannot be created ({exc.strerror})") from None
    return cache.made_once(
        directory,
        label,
        events,
        lambda: cached(scale_factor, root),
        lambda: _generate(scale_factor, events, root, binary),
    )


def _generate(scale_factor: float, events: EventSink, root: Path, binary: str) -> TpchFiles:
    """Generate the data into the cache (in :func:`cache.made_once`)."""
    reap(root, KIND_GENERATING, events=events)
    work = root / owned_name(KIND_GENERATING)
    target = data_dir(scale_factor, root)
    events(
        Phase(
            f"generating TPC-H data at SF {sf_label(scale_factor)} with tpchgen-cli "
            f"(about {format_bytes(estimated_bytes(scale_factor))}, once: kept in {target})"
        )
    )
    created = [work]
    try:
        work.mkdir(mode=0o755)
        timeout = GENERATE_TIMEOUT_PER_SF * max(1.0, scale_factor)
        argv = [binary, "csv", "-s", sf_label(scale_factor), "-o", str(work), "--no-progress"]
        run([*argv, "-q"], timeout=timeout)
        version = run([binary, "--version"]).stdout.strip()
        rows: dict[str, int] = {}
        sums: dict[str, str] = {}
        for table in TABLES:
            path = work / cache.csv_name(table)
            path.chmod(0o644)  # whatever the umask: a file others can write is refused
            rows[table], sums[table] = _count_rows(path)
        sizes = {t: (work / cache.csv_name(t)).stat().st_size for t in TABLES}
        doc = {
            "scale_factor": scale_factor,
            "generator": version,
            "command": " ".join(argv[1:]),
            "rows": rows,
            "bytes": sizes,
            "sha256": sums,
        }
        cache.write_manifest(work, doc)
        # an older manifest (without checksums) is replaced by this one; complete data that
        # another process renamed into place meanwhile is kept: it may be loading from it
        if cache.trusted(target) is not None and cached(scale_factor, root) is None:
            cache.discard(target, TABLES, OWN_FILES, "an older iolab's, or incomplete")
        try:
            work.rename(target)
        except OSError:
            if cached(scale_factor, root) is None:  # not another process that finished first
                raise
        else:
            created = []
    except OSError as exc:
        raise RunFailed(f"could not generate TPC-H data in {work}: {exc}") from exc
    finally:
        remove(created)
    found = cached(scale_factor, root)
    if found is None:
        raise RunFailed(f"tpchgen-cli left no complete data in {target}")
    return found


def _count_rows(path: Path) -> tuple[int, str]:
    """Lines in a CSV file less its header (TPC-H text holds no line breaks), and the file's
    SHA-256, in one read."""
    count = 0
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(cache.BLOCK_BYTES):
            count += block.count(b"\n")
            digest.update(block)
    return max(0, count - 1), digest.hexdigest()
