"""One name per idea: the one place that says which names are the same idea (docs/vocabulary.md).

Each :class:`Idea` is iolab's one name for a thing, used alike as a flag (``--warmup``) and as an
experiment key (``warmup``); its ``old`` names are iolab's former ones, still accepted (flag and
key) with a note on stderr; its ``elsewhere`` names are other tools' words for it, never
accepted, but a command refusing one points at iolab's (``iolab populate --threads 4``: did you
mean --connections?). :data:`KEPT` lists the names that look like one of these and are another
idea, with why they stay; :data:`PER_COMMAND`, the flags whose help says each command's own
meaning. Stored runs keep the names they were stored under: an old key read back is the new one.

Imported to start every command (the parser's rewrite of an old flag): standard library only.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

DOC = "docs/vocabulary.md"


@dataclass(frozen=True)
class Idea:
    name: str  # the flag without its dashes, the key with - for _
    meaning: str
    old: tuple[str, ...] = ()  # iolab's former names: accepted, with a note
    elsewhere: tuple[str, ...] = ()  # other tools' words: pointed at, not accepted
    # the workloads whose key was old[0] when cells were first stored: their cells' ids are
    # computed under that name, so a stored experiment keeps its cells (:func:`first_named`)
    first_in: tuple[str, ...] = ()

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


IDEAS: tuple[Idea, ...] = (
    Idea(
        "connections",
        "the measured load's concurrent database connections, each driven by its own thread "
        "or event loop: populate's loaders, TPC-C's virtual users (pgbench -c, sysbench "
        "--threads)",
        elsewhere=("threads", "clients", "users", "jobs", "workers"),
    ),
    Idea(
        "loaders",
        "connections that load the data before a measured window (TPC-C's and TPC-H's initial "
        "load; populate's load is the measured one, so its loaders are --connections)",
    ),
    Idea(
        "warmup",
        "the start of a measured load left out of every number and shaded on the timeline "
        "(populate: rows or a duration; TPC-C: a duration, the specification's ramp-up)",
        old=("rampup",),
        elsewhere=("ramp-up", "warm-up", "ramp_up", "warm_up"),
        first_in=("tpcc",),
    ),
    Idea(
        "duration",
        "how long the measured part lasts (a disk test: each pass)",
        elsewhere=("time", "runtime", "seconds"),
    ),
    Idea("rate", "an offered load, a fixed schedule over all connections", elsewhere=("tps",)),
)

# Names that look like an idea's and are another one, and why they stay as they are.
KEPT: Mapping[str, str] = {
    "disk --threads": "fio's numjobs and CrystalDiskMark's T: processes submitting I/O, not "
    "database connections; kept as the disk tools' users know it",
    "disk --qd": "fio's iodepth and CrystalDiskMark's Q: I/Os each thread keeps in flight; no "
    "database command has the idea",
    "pgbench -c / -j, sysbench --threads": "the tools' own arguments, passed unchanged after --; "
    "their results store them under the tools' names (clients, threads)",
}

# Flags more than one command has, whose help says what they mean in each: the same name, each
# command's own use of it (every other flag two commands share has one help text: see
# tests/unit/test_help_words.py).
PER_COMMAND: Mapping[str, str] = {
    "--engine": "the engines each command runs, and its default",
    "--connections": "the same idea, said as each load has it (a loader, a virtual user)",
    "--loaders": "what each command's initial load loads",
    "--warmup": "what is left out: rows or a duration (populate), a duration (TPC-C)",
    "--duration": "what lasts that long: a load, a measured window, a disk test's pass",
    "--rate": "what is offered: rows, transactions",
    "--mode": "each workload's modes",
    "--mix": "a disk test's read/write mix; TPC-C's transaction mix",
    "--dsn": "the engines and rights each command needs of a server of yours",
    "--results": "two texts: read (report, serve, results ...) or written (commands that run)",
    "--html": "what the HTML file holds",
    "--output": "what is written",
    "--name": "what is named",
    "--port": "the server that listens",
    "--rows": "what the rows make",
    "--with-disk": "what the disk run is used for",
    "--runs": "what is repeated: a disk test's passes, a check's re-runs",
}

_OLD = {old: idea for idea in IDEAS for old in idea.old}
_FLAGS = {"--" + old.replace("_", "-"): idea for idea in IDEAS for old in idea.old}
_noted: set[tuple[str, str]] = set()


def current(name: str) -> str:
    """iolab's name now for ``name`` (an experiment key or a flag): ``rampup`` -> ``warmup``,
    ``--rampup`` -> ``--warmup``; any other name as it is."""
    if name in _FLAGS:
        return _FLAGS[name].flag
    idea = _OLD.get(name)
    return idea.name if idea is not None else name


def note(old: str, new: str) -> None:
    """Says once on stderr that an old name was used: it still works."""
    if (old, new) in _noted:
        return
    _noted.add((old, new))
    print(f"note: {old} is now {new} (the old name still works; {DOC})", file=sys.stderr)


def renamed(
    values: Mapping[str, Any], known: Iterable[str], where: str = "", *, say: bool = True
) -> dict[str, Any]:
    """``values`` with each old key that is not one of ``known`` under its new name where that
    is one (``rampup`` -> ``warmup``), saying so (``workload.rampup is now workload.warmup``)
    unless ``say`` is false (stored parameters, read back). Both names given: the new wins."""
    known = set(known)
    out: dict[str, Any] = {}
    for key, value in values.items():
        new = current(key) if isinstance(key, str) else key
        if new == key or key in known or new not in known:
            out[key] = value
            continue
        if say:
            note(f"{where}{key}", f"{where}{new}")
        if new not in values:
            out[new] = value
    return out


def first_named(params: Mapping[str, Any]) -> dict[str, Any]:
    """A cell's parameters with each key renamed since cells were first stored under its first
    name (a TPC-C cell's ``warmup`` as ``rampup``): what its id is a hash of, so that an
    experiment stored before the rename resumes its cells instead of running them again."""
    kind = params.get("kind", params.get("workload"))
    out = dict(params)
    for idea in IDEAS:
        if kind in idea.first_in and idea.name in out and idea.old[0] not in out:
            out[idea.old[0]] = out.pop(idea.name)
    return out


def rewrite_argv(args: Sequence[str], options: Iterable[str]) -> list[str]:
    """``args`` of a command with each old flag the command lacks under its new name where the
    command has it (``--rampup 5s`` -> ``--warmup 5s``, ``--rampup=5s`` too), with the note."""
    options = set(options)
    out = []
    for arg in args:
        name, equals, value = arg.partition("=")
        if name in _FLAGS and name not in options and _FLAGS[name].flag in options:
            new = _FLAGS[name].flag
            note(name, new)
            out.append(new + equals + value)
        else:
            out.append(arg)
    return out


def has_old_flag(args: Sequence[str]) -> bool:
    """Whether any of ``args`` is an old flag (the parser looks no further otherwise)."""
    return any(a.partition("=")[0] in _FLAGS for a in args)


def same_idea(given: str, options: Sequence[str]) -> str:
    """``did you mean --connections?`` for ``--threads`` where the command has no --threads but
    has iolab's name of the same idea; "" otherwise."""
    bare = given.lstrip("-").lower()
    for idea in IDEAS:
        names = {idea.name, *idea.old, *idea.elsewhere}
        named = bare in names or bare.replace("-", "_") in names
        if named and idea.flag in options and idea.flag != given:
            return f"did you mean {idea.flag}?"
    return ""
