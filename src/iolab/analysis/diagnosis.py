"""Why: the resource that limited a run, read from its own probes (see docs/diagnosis.md).

Input: a run's probe data (series means, wait statistics, checkpoints), its parameters, summary
and environment snapshot, as :mod:`iolab.store` read them, and optionally what `iolab disk`
measured of its devices. Nothing here reads a file or a database. A ``--dsn`` server on this
machine (the summary's ``server_local``) is judged by this machine's host and devices; one
elsewhere by its waits alone.

Output: :class:`Diagnosis`: the limit (one of :data:`LIMITS`), its share of the sessions' time,
and its evidence as numbers with names and units, each rendered as a sentence. The method:

1. ``rate``: an open-loop load that reached its offered rate (the parameter ``rate``, against
   each workload's achieved figure, :data:`ACHIEVED`) was held below capacity: nothing
   limited it.
2. A device at or near a cap iolab knows (a testbed device's throttle, or the best `iolab disk`
   measured of it) while the sessions' waits do not point elsewhere: that device's role.
3. The sessions' time by resource, from the wait events mapped by :func:`resource_of`: the
   leading resource when it explains enough of the time and clearly more than the next
   (:data:`LEAD_SHARE`, :data:`LEAD_RATIO`); a device or CPU lead must not be contradicted by
   the device's or the host's own counters. On a saturated host (:data:`CPU_BUSY`) a lead on a
   device short of its limit, or on the client, is the CPU's. A WAL or data device lead that
   its device's counters deny (far from its capacity) is that device's latency when the
   sessions spent most of their time on it (:data:`LATENCY_SHARE`): ``wal-latency``,
   ``data-latency``.
4. The host's CPU busy on its own, where the waits say little (MariaDB, which times no CPU).
5. Otherwise ``none``, with the two leading candidates and their evidence.

Per cell, :func:`cell_verdict` takes the verdict most of its runs share (else "varies"); per
finding, :func:`finding_why` says whether the limit moved between the two cells.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from iolab.engines.external import dsn_is_local, parse_dsn
from iolab.errors import IolabError
from iolab.latency.recording import RATE_TOLERANCE, rate_held
from iolab.probes.data import ProbeData
from iolab.probes.interface import WaitStat
from iolab.units import format_rate

WAL, DATA, TEMP = "wal-device", "data-device", "temp-device"
# a device far from its capacity that the sessions spent most of their time on: the time each
# of its I/Os takes (commits' log flushes, reads) held them, not what the device can do
WAL_LATENCY, DATA_LATENCY = "wal-latency", "data-latency"
CPU, CONTENTION, CLIENT, RATE, NONE = "cpu", "contention", "client", "rate", "none"
DEVICE = "device"  # a disk profile: the device under test is what it measures
LIMITS = (WAL, WAL_LATENCY, DATA, DATA_LATENCY, TEMP, CPU, CONTENTION, CLIENT, RATE, NONE)
RESOURCES = (WAL, DATA, TEMP, CPU, CONTENTION, CLIENT)
VARIES = "varies"

ROLE_OF = {WAL: "wal", DATA: "data", TEMP: "temp"}
LATENCY_OF = {WAL: WAL_LATENCY, DATA: DATA_LATENCY}  # a device resource -> its latency's limit
# the device role a verdict names (a finding whose key moves another role is flagged)
ROLE_OF_LIMIT = {**ROLE_OF, WAL_LATENCY: "wal", DATA_LATENCY: "data"}
# the (probe, series) a verdict reads: a store need not read the others
CAP_SERIES = tuple(("device", n) for n in ("read_iops", "write_iops", "read_mbps", "write_mbps"))
SERIES = tuple(
    [
        ("device", n)
        for n in (
            "util_pct",
            "aqu_sz",
            "read_iops",
            "write_iops",
            "read_mbps",
            "write_mbps",
            "read_await_ms",
            "write_await_ms",
        )
    ]
    + [("host", n) for n in ("cpu_user_pct", "cpu_system_pct", "cpu_steal_pct")]
    + [("cgroup", n) for n in ("cpu_cores", "cpu_limit_cores", "throttled_periods_per_s")]
)  # every series diagnose() reads: a report reads only these (tests/unit/test_diagnosis.py)
WORDS = {
    WAL: "the WAL / redo log device",
    WAL_LATENCY: "the WAL / redo log device's latency (each commit's flush), not its capacity",
    DATA: "the data device",
    DATA_LATENCY: "the data device's latency (each read), not its capacity",
    TEMP: "the temp device",
    CPU: "CPU",
    CONTENTION: "locks and latches between sessions",
    CLIENT: "the client (the server waited for the next statement)",
    RATE: "the offered rate (an open-loop load held below capacity)",
    NONE: "nothing singled out",
    DEVICE: "the device under test",
}

# Thresholds (docs/diagnosis.md says why)
LEAD_SHARE = 0.40  # the leading resource explains at least this share of the sessions' time
LEAD_RATIO = 1.5  # ... and at least this many times the next one's
AT_CAP = 0.90  # a device doing this share of a known cap (IOPS or MB/s) is at its limit
AT_CAP_TIME = 0.50  # ... and so is one at that share of its cap in this share of the samples
# (checkpoints and flushes come in bursts: a run at its cap 85 % of the time has a lower mean)
CAP_WAIT_SHARE = 0.20  # ... and is the limit when sessions waited on it at least this much
DEVICE_IDLE = 0.30  # a device lead is contradicted below this saturation (busy or cap share)
# ... and on a device without a throttle iolab knows, below this busy time: it had time to
# spare, so the sessions waited on its latency, not on its capacity (a faster device helps,
# but it was not at its limit)
DEVICE_SPARE = 0.70
# ... and such a lead on a WAL or data device is its latency when the sessions spent at least
# this share of their time on it: most of it (a capacity lead needs less, LEAD_SHARE, since the
# device's own counters confirm it; a latency lead has only the waits to speak for it)
LATENCY_SHARE = 0.50
CPU_BUSY = 0.85  # host CPU busy (user + system + steal) that makes the CPU the limit alone
CPU_IDLE = 0.50  # a CPU lead is contradicted below this host CPU busy
MIN_SAMPLES = 20  # session-samples below which sampled waits are not weighed (2 s of one session)
CONTEXT_SHARE = 0.10  # waits a saturated CPU explains are listed from this share of the time
QUOTA_PERIODS = 10.0  # --cpus quota periods a second (cgroups.CPU_PERIOD_US: 100 ms)
QUOTA_THROTTLED = 0.5  # a quota run out of in this share of its periods held the engine


@dataclass(frozen=True)
class Evidence:
    """One number behind a verdict: ``name`` (stable, for machines), ``value`` in ``unit``,
    and ``text``, the sentence a person reads."""

    name: str
    value: float
    unit: str
    text: str
    group: str = ""  # consecutive evidence of one group reads as one sentence


@dataclass(frozen=True)
class Candidate:
    limit: str
    share: float | None
    evidence: tuple[Evidence, ...]


@dataclass(frozen=True)
class Diagnosis:
    """What limited one run. ``share``: the part of the sessions' time the limit explains
    (None where no wait table says: a disk profile, MariaDB's uninstrumented redo waits, a
    rate). ``candidates``: the two leading ones when ``limit`` is ``none``."""

    limit: str
    share: float | None
    evidence: tuple[Evidence, ...]
    candidates: tuple[Candidate, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def line(self) -> str:
        """``limited by wal-device (61 % of session time)``."""
        if self.limit == NONE:
            names = " or ".join(c.limit for c in self.candidates) or "no candidate"
            return f"limited by none singled out (candidates: {names})"
        offered = next((e for e in self.evidence if e.name == "rate.offered"), None)
        if self.limit == RATE and offered is not None:
            return f"limited by rate (held its offered {format_rate(offered.value)} {offered.unit})"
        share = "" if self.share is None else f" ({self.share:.0%} of session time)"
        return f"limited by {self.limit}{share}"

    def sentences(self) -> list[str]:
        return sentences(self.evidence) + list(self.notes)

    def as_json(self) -> dict[str, Any]:
        def numbers(ev: Sequence[Evidence]) -> list[dict[str, Any]]:
            return [{"name": e.name, "value": _json_number(e.value), "unit": e.unit} for e in ev]

        doc: dict[str, Any] = {
            "limit": self.limit,
            "share": _json_number(self.share),
            "evidence": sentences(self.evidence),
            "numbers": numbers(self.evidence),
            "notes": list(self.notes),
        }
        if self.limit == NONE:
            doc["candidates"] = [
                {
                    "limit": c.limit,
                    "share": _json_number(c.share),
                    "evidence": sentences(c.evidence),
                    "numbers": numbers(c.evidence),
                }
                for c in self.candidates
            ]
        return doc

    def record(self) -> dict[str, Any]:
        """Everything of the verdict, as the results database keeps it with its run (every
        number and sentence as computed, so reading it back shows it byte for byte)."""

        def ev(items: Sequence[Evidence]) -> list[list[Any]]:
            return [[e.name, e.value, e.unit, e.text, e.group] for e in items]

        return {
            "limit": self.limit,
            "share": self.share,
            "evidence": ev(self.evidence),
            "candidates": [[c.limit, c.share, ev(c.evidence)] for c in self.candidates],
            "notes": list(self.notes),
        }

    @classmethod
    def from_record(cls, doc: Mapping[str, Any]) -> Diagnosis:
        """The verdict :meth:`record` kept."""

        def ev(items: Sequence[Sequence[Any]]) -> tuple[Evidence, ...]:
            return tuple(
                Evidence(str(n), float(v), str(u), str(t), str(g)) for n, v, u, t, g in items
            )

        def share(x: Any) -> float | None:
            return None if x is None else float(x)

        return cls(
            str(doc["limit"]),
            share(doc["share"]),
            ev(doc["evidence"]),
            tuple(Candidate(str(lim), share(s), ev(e)) for lim, s, e in doc["candidates"]),
            tuple(str(n) for n in doc["notes"]),
        )


def sentences(evidence: Sequence[Evidence]) -> list[str]:
    """The evidence as a person reads it: one sentence per group."""
    out: list[str] = []
    last = None
    for e in evidence:
        if e.group and e.group == last:
            out[-1] += f", {e.text}"
        else:
            out.append(e.text)
        last = e.group or None
    return out


def _json_number(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else round(x, 4)


@dataclass(frozen=True)
class Caps:
    """What a device can do at most: a testbed throttle, or the best an `iolab disk` run
    measured of it (None: not known)."""

    read_iops: float | None = None
    write_iops: float | None = None
    read_mbps: float | None = None
    write_mbps: float | None = None
    source: str = ""  # "testbed throttle of ssd", "the best test of iolab disk run 12"
    word: str = "cap"  # what the figures are: a "cap", or the "best measured"


@dataclass(frozen=True)
class RunFacts:
    """What a run's record says beyond its probes."""

    engine: str
    workload: str
    params: Mapping[str, Any] = field(default_factory=dict)
    summary: Mapping[str, Any] = field(default_factory=dict)
    environment: Mapping[str, Any] = field(default_factory=dict)


# -- wait events -> resources --------------------------------------------------------------

PG_WAL_LWLOCKS = frozenset({"WALWrite", "WALBufMapping", "WALSync"})
PG_DATA_LWLOCKS = frozenset({"BufferIO"})
# temp files: ``BufFileRead`` up to PostgreSQL 16, ``BuffileRead`` from 17 on (the names are
# generated from a list since), and the shared file sets of parallel hash joins and sorts
PG_TEMP_IO = ("buffile", "sharedfileset")
# Locks held across a device's I/O: contention between sessions, unless that device is at its
# cap (then the lock's holder waits on the device, and the others wait behind it)
HELD_ACROSS = {("Lock", "extend"): DATA}  # the relation extension lock: the extension's write


def resource_of(source: str, wait_class: str, event: str) -> str | None:
    """The resource one wait event's time counts for, or None where it counts for none
    (MariaDB's table I/O, which nests the file waits; parallel workers, whose own waits are
    not sampled; sleeps). See docs/diagnosis.md for the table."""
    if source == "performance_schema":
        return _mariadb_resource(wait_class, event)
    return _postgres_resource(wait_class, event)


def _postgres_resource(cls: str, event: str) -> str | None:
    if (cls, event) == ("CPU", "running"):
        return CPU
    if cls in ("Client", "Idle"):
        return CLIENT
    if cls == "IO":
        if event.startswith("Wal"):
            return WAL
        if event.lower().startswith(PG_TEMP_IO):
            return TEMP
        return DATA
    if cls == "LWLock":
        if event in PG_WAL_LWLOCKS:
            return WAL
        if event in PG_DATA_LWLOCKS:
            return DATA
        return CONTENTION
    if cls in ("Lock", "BufferPin"):
        return CONTENTION
    return None  # IPC (parallel workers, checkpoints requested), Timeout, Activity, Extension


def _mariadb_resource(cls: str, event: str) -> str | None:
    if cls == "wait/io/file":
        if event.startswith(("innodb/innodb_log_file", "sql/binlog", "innodb/ib_logfile")):
            return WAL
        if "temp" in event.lower():
            return TEMP
        return DATA
    if cls == "wait/io/socket":
        return CLIENT
    if cls.startswith("wait/synch") or cls.startswith("wait/lock"):
        if cls == "wait/lock/table":
            return None  # the table lock instrument times the handler call around it
        return CONTENTION
    return None  # wait/io/table nests the file waits and the row work; idle is left out


@dataclass(frozen=True)
class SessionTime:
    """The sessions' time by resource: ``seconds`` per resource, ``total`` the time they
    stand against (sampled session time, or sessions x duration for MariaDB), and the top
    events of each resource."""

    seconds: Mapping[str, float]
    total: float
    events: Mapping[str, tuple[tuple[str, float], ...]]  # resource -> (event, share of total)
    source: str
    uncounted: float  # seconds of events that count for no resource
    held: Mapping[str, float] = field(default_factory=dict)  # device -> seconds of HELD_ACROSS

    def at_cap_share(self, resource: str) -> float:
        """The share on ``resource`` when its device is at its cap: with the locks held
        across its I/O."""
        extra = self.held.get(resource, 0.0) / self.total if self.total > 0 else 0.0
        return self.share(resource) + extra

    def share(self, resource: str) -> float:
        return self.seconds.get(resource, 0.0) / self.total if self.total > 0 else 0.0


def session_time(
    waits: Sequence[WaitStat], *, sessions: int | None, duration: float
) -> SessionTime | None:
    """Map a run's wait table to resources (None: no wait table)."""
    if not waits:
        return None
    source = waits[0].source
    seconds: dict[str, float] = {}
    per_event: dict[str, list[tuple[str, float]]] = {}
    uncounted = 0.0
    held: dict[str, float] = {}
    for w in waits:
        device = (
            HELD_ACROSS.get((w.wait_class, w.event)) if w.source != "performance_schema" else None
        )
        if device is not None:
            held[device] = held.get(device, 0.0) + w.est_seconds
        r = resource_of(w.source, w.wait_class, w.event)
        if r is None:
            uncounted += w.est_seconds
            continue
        seconds[r] = seconds.get(r, 0.0) + w.est_seconds
        per_event.setdefault(r, []).append((f"{w.wait_class} {w.event}", w.est_seconds))
    if source == "performance_schema":
        # summed timers over session-seconds: the rest is CPU, the client, or what MariaDB
        # does not instrument (redo log writes and syncs of 10.8+): it is not counted
        total = (sessions or 1) * duration
    else:
        total = sum(w.est_seconds for w in waits)
    if total <= 0:
        return None
    events = {
        r: tuple((name, s / total) for name, s in sorted(ev, key=lambda e: -e[1])[:2])
        for r, ev in per_event.items()
    }
    return SessionTime(seconds, total, events, source, uncounted, held)


# -- devices and host ------------------------------------------------------------------------


@dataclass(frozen=True)
class DeviceUse:
    """One device behind one or more roles, whole-run means."""

    device: str
    roles: tuple[str, ...]
    util_pct: float
    aqu_sz: float
    read_iops: float
    write_iops: float
    read_mbps: float
    write_mbps: float
    read_ms: float
    write_ms: float
    caps: Caps | None
    time_at_cap: float = 0.0  # the share of the samples at AT_CAP of a known cap or more

    def cap_share(self) -> tuple[float, str] | None:
        """The largest share of a known cap the device reached, and which (``write IOPS``)."""
        if self.caps is None:
            return None
        c = self.caps
        pairs = [
            (self.read_iops, c.read_iops, "read IOPS"),
            (self.write_iops, c.write_iops, "write IOPS"),
            (self.read_mbps, c.read_mbps, "read MB/s"),
            (self.write_mbps, c.write_mbps, "write MB/s"),
        ]
        found = [(v / cap, what) for v, cap, what in pairs if cap and math.isfinite(v)]
        return max(found) if found else None

    @property
    def saturation(self) -> float:
        """How close to its limit the device ran: the share of a known cap, else its busy."""
        cap = self.cap_share()
        busy = self.util_pct / 100 if math.isfinite(self.util_pct) else 0.0
        return max(busy, cap[0]) if cap else busy

    @property
    def at_cap(self) -> bool:
        """At a known cap: on average, or in most of the samples (bursts of writes)."""
        cap = self.cap_share()
        return cap is not None and (cap[0] >= AT_CAP or self.time_at_cap >= AT_CAP_TIME)


def _mean(probes: ProbeData, probe: str, name: str, subject: str) -> float:
    s = probes.one(probe, name, subject=subject)
    return s.mean if s is not None else math.nan


def _time_at_cap(probes: ProbeData, dev: str, caps: Caps | None) -> float:
    """The share of the device's samples in which it did AT_CAP of a known cap or more."""
    if caps is None:
        return 0.0
    columns = [
        (s.values, cap)
        for name, cap in (
            ("read_iops", caps.read_iops),
            ("write_iops", caps.write_iops),
            ("read_mbps", caps.read_mbps),
            ("write_mbps", caps.write_mbps),
        )
        if cap and (s := probes.one("device", name, subject=dev)) is not None and s.values
    ]
    if not columns:
        return 0.0
    n = min(len(v) for v, _ in columns)
    counted = at = 0
    for i in range(n):
        shares = [v[i] / cap for v, cap in columns if math.isfinite(v[i])]
        if shares:
            counted += 1
            at += max(shares) >= AT_CAP
    return at / counted if counted else 0.0


def devices(
    probes: ProbeData, caps: Mapping[str, Caps], samples: ProbeData | None = None
) -> list[DeviceUse]:
    """Every device of the run with its roles, means and caps (``caps`` by device name); the
    time at a cap is read from ``samples`` when given, else from ``probes``' values."""
    out: list[DeviceUse] = []
    seen: set[str] = set()
    for s in probes.series:
        if s.key.probe != "device" or s.key.subject in seen:
            continue
        dev = s.key.subject
        seen.add(dev)
        roles = tuple(r for r in s.key.role.split("+") if r)
        out.append(
            DeviceUse(
                device=dev,
                roles=roles,
                util_pct=_mean(probes, "device", "util_pct", dev),
                aqu_sz=_mean(probes, "device", "aqu_sz", dev),
                read_iops=_mean(probes, "device", "read_iops", dev),
                write_iops=_mean(probes, "device", "write_iops", dev),
                read_mbps=_mean(probes, "device", "read_mbps", dev),
                write_mbps=_mean(probes, "device", "write_mbps", dev),
                read_ms=_mean(probes, "device", "read_await_ms", dev),
                write_ms=_mean(probes, "device", "write_await_ms", dev),
                caps=caps.get(dev),
                time_at_cap=_time_at_cap(samples or probes, dev, caps.get(dev)),
            )
        )
    return out


def testbed_caps(environment: Mapping[str, Any]) -> dict[str, Caps]:
    """The throttles of the testbed devices a run used, by device name, from its
    environment snapshot's storage."""
    out: dict[str, Caps] = {}
    for st in (environment.get("storage") or {}).values():
        bed = (st or {}).get("testbed") or {}
        limits = bed.get("limits") or {}
        dev = ((st or {}).get("device") or {}).get("name")
        if not dev or not any(v for v in limits.values()):
            continue

        def mbps(v: Any) -> float | None:
            return float(v) / 1e6 if v else None

        out[dev] = Caps(
            read_iops=float(limits["read_iops"]) if limits.get("read_iops") else None,
            write_iops=float(limits["write_iops"]) if limits.get("write_iops") else None,
            read_mbps=mbps(limits.get("read_bps")),
            write_mbps=mbps(limits.get("write_bps")),
            source=f"testbed throttle of {bed.get('name')}",
        )
    return out


def host_busy(probes: ProbeData) -> float:
    """The host's CPU busy over the run, 0..1 (user + system + steal), NaN if not sampled."""
    parts = [_mean(probes, "host", n, "all") for n in ("cpu_user_pct", "cpu_system_pct")]
    if not all(math.isfinite(p) for p in parts):
        return math.nan
    steal = _mean(probes, "host", "cpu_steal_pct", "all")
    return (sum(parts) + (steal if math.isfinite(steal) else 0.0)) / 100


@dataclass(frozen=True)
class CpuCap:
    """The engine's CPU under a ``--cpus`` cap, from the run's cgroup series (probe ``cgroup``)."""

    used: float  # cores the group used, mean over the run
    limit: float  # cores of its quota
    throttled: float  # quota periods per second in which it ran out

    @property
    def share(self) -> float:
        return self.used / self.limit if self.limit > 0 else math.nan

    @property
    def held(self) -> bool:
        """The cap held the engine: it used nearly all of its quota and ran out of it, or ran
        out of it in most periods (a short run's start, or a busy host's other work, pulls the
        mean use below the quota while the quota still stops the engine)."""
        if self.throttled <= 0:
            return False
        return self.share >= AT_CAP or self.throttled >= QUOTA_THROTTLED * QUOTA_PERIODS

    def evidence(self) -> list[Evidence]:
        return [
            Evidence(
                "cpu_cap.share",
                self.share * 100,
                "%",
                f"the engine used {self.used:.2f} of its {self.limit:g} CPU cores (--cpus), "
                f"{self.share:.0%}",
            ),
            Evidence(
                "cpu_cap.throttled_periods",
                self.throttled,
                "periods/s",
                f"it ran out of its quota in {self.throttled:.1f} periods a second",
            ),
        ]


def cpu_cap(probes: ProbeData) -> CpuCap | None:
    """The run's CPU cap and its use (None: the run had no ``--cpus``)."""
    limit = _mean(probes, "cgroup", "cpu_limit_cores", "engine")
    if not math.isfinite(limit) or limit <= 0:
        return None
    used = _mean(probes, "cgroup", "cpu_cores", "engine")
    throttled = _mean(probes, "cgroup", "throttled_periods_per_s", "engine")
    return CpuCap(
        used if math.isfinite(used) else 0.0,
        limit,
        throttled if math.isfinite(throttled) else 0.0,
    )


def checkpoint_share(probes: ProbeData) -> float:
    """The share of the run during which a checkpoint was running (overlaps counted once)."""
    if probes.duration <= 0 or not probes.checkpoints:
        return 0.0
    spans = sorted(
        (
            max(0.0, c.start_s),
            min(probes.duration, c.end_s if c.end_s is not None else probes.duration),
        )
        for c in probes.checkpoints
    )
    covered, end = 0.0, 0.0
    for start, stop in spans:
        start = max(start, end)  # noqa: PLW2901
        if stop > start:
            covered += stop - start
            end = stop
    return covered / probes.duration


# -- evidence --------------------------------------------------------------------------------


def _wait_evidence(resource: str, st: SessionTime) -> list[Evidence]:
    share = st.share(resource)
    what = {
        WAL: "on the WAL / redo log",
        DATA: "on data file I/O",
        TEMP: "on temp file I/O",
        CPU: "on CPU (waiting for nothing)",
        CONTENTION: "on locks and latches",
        CLIENT: "for the client's next statement",
    }[resource]
    events = ", ".join(f"{name} {s:.0%}" for name, s in st.events.get(resource, ()))
    sampled = "sampled" if st.source != "performance_schema" else "session"
    text = f"sessions waited {what} {share:.0%} of their {sampled} time"
    if resource == CPU:
        text = f"sessions ran on CPU, waiting for nothing, {share:.0%} of their sampled time"
    if events and resource != CPU:
        text += f" ({events})"
    return [Evidence(f"{resource}.session_share", share * 100, "%", text)]


def _device_evidence(d: DeviceUse, role: str, direction: str | None = None) -> list[Evidence]:
    """Busy, queue, IOPS, MB/s, ms per I/O and the share of a known cap: the I/Os of
    ``direction`` ("read", "write"), else of the cap the device came closest to, else of its
    larger side."""
    label = f"{role} device {d.device}"
    g = f"device {d.device}"
    out: list[Evidence] = []
    if math.isfinite(d.util_pct):
        out.append(
            Evidence(f"{role}.busy", d.util_pct, "%", f"the {label} was busy {d.util_pct:.0f} %", g)
        )
    if math.isfinite(d.aqu_sz):
        out.append(Evidence(f"{role}.queue", d.aqu_sz, "requests", f"queue {d.aqu_sz:.1f}", g))
    cap = d.cap_share()
    writes = math.isfinite(d.write_iops) and d.write_iops >= (
        d.read_iops if math.isfinite(d.read_iops) else 0
    )
    if cap is not None:  # the direction of the cap it came closest to
        writes = cap[1].startswith("write")
    if direction is not None:
        writes = direction == "write"
    iops, mbps, ms, rw = (
        (d.write_iops, d.write_mbps, d.write_ms, "write")
        if writes
        else (d.read_iops, d.read_mbps, d.read_ms, "read")
    )
    if math.isfinite(iops):
        out.append(Evidence(f"{role}.{rw}_iops", iops, "IO/s", f"{iops:,.0f} {rw}s/s", g))
    if math.isfinite(mbps):
        out.append(Evidence(f"{role}.{rw}_mbps", mbps, "MB/s", f"{mbps:,.2f} MB/s", g))
    if math.isfinite(ms):
        out.append(Evidence(f"{role}.{rw}_ms", ms, "ms", f"{ms:.2f} ms per {rw}", g))
    if cap is not None and d.caps is not None:
        out.append(
            Evidence(
                f"{role}.cap_share",
                cap[0] * 100,
                "%",
                f"{cap[0]:.0%} of its {cap[1]} cap ({d.caps.source})"
                if d.caps.word == "cap"
                else f"{cap[0]:.0%} of the best {cap[1]} measured ({d.caps.source})",
                g,
            )
        )
        if d.time_at_cap > 0 and cap[0] < AT_CAP:  # bursts: say how long it was at the cap
            out.append(
                Evidence(
                    f"{role}.time_at_cap",
                    d.time_at_cap * 100,
                    "%",
                    f"at {AT_CAP:.0%} of that cap or more in {d.time_at_cap:.0%} of the samples",
                    g,
                )
            )
    return out


# PostgreSQL's data file waits that are writes (DataFileWrite, DataFileExtend, DataFileSync,
# DataFileFlush, DataFileTruncate); the others (DataFileRead, DataFilePrefetch, BufferIO, AIO
# completions, MariaDB's file waits, which do not say) count as reads
WRITE_EVENTS = ("write", "extend", "sync", "flush", "truncate")


def _latency_direction(resource: str, st: SessionTime) -> str:
    """The I/O whose latency held the sessions: the WAL's writes (a commit waits for its log
    flush); the data device's reads, unless its leading wait events are writes."""
    if resource == WAL:
        return "write"
    top = st.events.get(resource, ())
    writes = sum(s for name, s in top if any(w in name.lower() for w in WRITE_EVENTS))
    return "write" if writes > sum(s for _, s in top) - writes else "read"


def _capacity_evidence(d: DeviceUse, role: str, rw: str) -> Evidence:
    """How little of its capacity a latency-bound device used: its busy time, or its share of
    a known cap when that is larger (:attr:`DeviceUse.saturation`)."""
    used, cap = d.saturation, d.cap_share()
    measure = "its busy time"
    if cap is not None and d.caps is not None and cap[0] >= used:
        measure = (
            f"its share of its {cap[1]} cap"
            if d.caps.word == "cap"
            else f"its share of the best {cap[1]} measured"
        )
    return Evidence(
        f"{role}.capacity_share",
        used * 100,
        "%",
        f"the {role} device {d.device} used at most {used:.0%} of its capacity ({measure}): "
        f"the sessions waited on how long each {rw} took, not on how many it could do",
    )


def _host_evidence(busy: float) -> list[Evidence]:
    if not math.isfinite(busy):
        return []
    return [Evidence("host.cpu_busy", busy * 100, "%", f"the host's CPUs were {busy:.0%} busy")]


def _device_for(resource: str, devs: Sequence[DeviceUse]) -> DeviceUse | None:
    role = ROLE_OF[resource]
    found = [d for d in devs if role in d.roles]
    return max(found, key=lambda d: d.saturation) if found else None


# -- an offered rate, a server's whereabouts ------------------------------------------------


def _tpcc_tps(summary: Mapping[str, Any]) -> float | None:
    """TPC-C's transactions a second in the measured window: those its schedule offered
    (commits and the spec's rollbacks; a retry takes no slot of the schedule)."""
    kinds, seconds = summary.get("transactions"), summary.get("measured_seconds")
    if not isinstance(kinds, Mapping) or not seconds:
        return None
    ended = sum((k.get("count") or 0) + (k.get("rollbacks") or 0) for k in kinds.values())
    return ended / float(seconds)


# each workload's figure its offered rate (the run's parameter ``rate``, as ``--rate`` or a
# driver's own rate option stores it) is held against: its unit, and how its summary gives it
ACHIEVED: dict[str, tuple[str, Callable[[Mapping[str, Any]], Any]]] = {
    "populate": ("rows/s", lambda s: s.get("rows_per_second")),
    "tpcc": ("tx/s", _tpcc_tps),
    "pgbench": ("tx/s", lambda s: s.get("tps")),
    "sysbench": ("tx/s", lambda s: s.get("tps")),
}


def held_offered_rate(facts: RunFacts) -> tuple[float, float, str] | None:
    """(offered, achieved, unit) of a run that held its offered rate: achieved within the
    tolerance the run itself is judged by (:func:`iolab.latency.recording.rate_held`: 5 %,
    over or under; a random schedule's, :data:`POISSON_SCHEDULES`, by its count); None without
    a rate, without the achieved figure, or outside it."""
    found = ACHIEVED.get(facts.workload)
    if found is None:
        return None
    unit, figure = found
    offered, achieved = _number(facts.params.get("rate")), _number(figure(facts.summary))
    if offered is None or achieved is None or offered <= 0:
        return None
    if not _held(facts, offered, achieved):
        return None
    return offered, achieved, unit


# pgbench's -R and sysbench's --rate draw their arrivals at random (a Poisson process): the n
# a window holds vary by about sqrt(n) around n, the rate times its length, so such a run held
# its rate within 3 of those (or the 5 % populate's and TPC-C's fixed schedules are judged by)
POISSON_SCHEDULES = frozenset({"pgbench", "sysbench"})


def _held(facts: RunFacts, offered: float, achieved: float) -> bool:
    if facts.workload in POISSON_SCHEDULES:
        n = _number(facts.summary.get("transactions"))
        if n is None:
            seconds = _number(facts.params.get("duration"))
            n = achieved * seconds if seconds is not None else None
        if n is not None and n > 0 and achieved > 0:
            due = n * offered / achieved  # arrivals the schedule drew: its rate times the window
            slack = max(RATE_TOLERANCE, 3 / math.sqrt(due))
            return abs(achieved - offered) <= slack * offered
    return rate_held(offered, achieved)


def _number(x: object) -> float | None:
    """A finite number stored as one (not a flag, not text), else None."""
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return None
    return float(x)


def server_local(facts: RunFacts) -> bool:
    """A ``--dsn`` server on this machine: as its run found it (``server_local`` in the
    summary: a unix socket or a loopback address), or, for a run that did not record it, as
    its DSN names its host."""
    found = facts.summary.get("server_local")
    if isinstance(found, bool):
        return found
    try:
        return dsn_is_local(parse_dsn(str(facts.params.get("dsn") or "")))
    except IolabError:
        return False


# -- the verdict -----------------------------------------------------------------------------


def diagnose(
    probes: ProbeData | None,
    facts: RunFacts,
    disk_caps: Mapping[str, Caps] | None = None,
    samples: ProbeData | None = None,
) -> Diagnosis | None:
    """What limited the run (None: it recorded no probes). ``samples``: the device series of
    :data:`CAP_SERIES` with their values, when ``probes`` came without them (how long a device
    was at its cap is read from its samples)."""
    if probes is None:
        return None
    caps = testbed_caps(facts.environment) | dict(disk_caps or {})
    devs = devices(probes, caps, samples)
    busy = host_busy(probes)
    quota = cpu_cap(probes)
    if facts.workload == "disk":
        return _disk(devs, busy)
    notes: list[str] = []
    if facts.params.get("dsn") and not server_local(facts):
        notes.append(
            "a --dsn server on another host: its devices and host are not this machine's, so "
            "only its wait events speak for it"
        )
        devs, busy = [], math.nan
    elif facts.params.get("dsn") and not devs:
        notes.append(
            "a --dsn server on this machine, but no device was recorded for its data "
            "directory (the server did not let iolab read where it is, or it is in memory): "
            "its devices are unknown, so only its wait events speak for them"
        )
    sessions = next(
        (facts.params.get(k) for k in ("connections", "clients", "threads") if facts.params.get(k)),
        facts.summary.get("connections"),
    )
    waits = probes.waits
    if sessions is None and waits and waits[0].source == "performance_schema":
        # summed timers weigh only against the sessions' time (a driver's own arguments)
        notes.append("the number of sessions is not recorded: MariaDB's waits are not weighed")
        waits = ()
    sampled = sum(w.samples for w in waits if w.source != "performance_schema")
    if 0 < sampled < MIN_SAMPLES:
        notes.append(f"the sessions were sampled {sampled} times: too few to weigh their waits")
        waits = ()
    st = session_time(waits, sessions=sessions, duration=probes.duration)
    if st is not None and st.source == "performance_schema":
        explained = sum(st.seconds.values()) / st.total
        notes.append(
            f"MariaDB's timed waits explain {explained:.0%} of the sessions' time; the rest is "
            "CPU, the client, or redo log writes and syncs, which MariaDB 10.8+ does not time"
        )
    ckpt = checkpoint_share(probes)
    extra = []
    if ckpt > 0:
        extra.append(
            Evidence("checkpoint.share", ckpt * 100, "%", f"checkpoints ran {ckpt:.0%} of the run")
        )

    def resource_evidence(r: str) -> list[Evidence]:
        ev = _wait_evidence(r, st) if st is not None and r in st.seconds else []
        if r in ROLE_OF:
            d = _device_for(r, devs)
            if d is not None:
                ev += _device_evidence(d, ROLE_OF[r])
            if r == DATA:
                ev += extra
        if r in (CPU, CLIENT):
            ev += _host_evidence(busy)
        if r == CPU and quota is not None:
            ev += quota.evidence()
        return ev

    def verdict(r: str, share: float | None) -> Diagnosis:
        return Diagnosis(r, share, tuple(resource_evidence(r)), notes=tuple(notes))

    def latency_verdict(r: str, d: DeviceUse, share: float, st: SessionTime) -> Diagnosis:
        role, rw = ROLE_OF[r], _latency_direction(r, st)
        ev = [
            *_wait_evidence(r, st),
            *_device_evidence(d, role, rw),
            _capacity_evidence(d, role, rw),
        ]
        if r == DATA:
            ev += extra
        return Diagnosis(LATENCY_OF[r], share, tuple(ev), notes=tuple(notes))

    # 1. an open-loop load that got its rate
    kept = held_offered_rate(facts)
    if kept is not None:
        offered, achieved, unit = kept
        ev = [
            Evidence("rate.offered", offered, unit, f"offered {format_rate(offered)} {unit}"),
            Evidence(
                "rate.achieved",
                achieved,
                unit,
                f"achieved {format_rate(achieved)} {unit} ({achieved / offered:.0%})",
            ),
        ]
        if st is not None and CLIENT in st.seconds:
            ev += _wait_evidence(CLIENT, st)
        return Diagnosis(RATE, None, tuple(ev), notes=tuple(notes))

    # 2. a device at a cap iolab knows, its waits not pointing elsewhere
    at_cap = []
    for r in (WAL, DATA, TEMP):
        d = _device_for(r, devs)
        cap = d.cap_share() if d is not None else None
        if d is None or cap is None or not d.at_cap:
            continue
        share = st.at_cap_share(r) if st is not None else None
        # MariaDB times neither redo log syncs nor the waits for free pages its page cleaner
        # makes: its sessions' waits can deny a device only by pointing elsewhere
        visible = st is not None and st.source != "performance_schema"
        if visible and share is not None and share < CAP_WAIT_SHARE:
            continue
        elsewhere = (
            max((st.share(x) for x in RESOURCES if x not in (r, CONTENTION)), default=0.0)
            if st
            else 0.0
        )
        if not visible and elsewhere >= LEAD_SHARE:
            continue
        at_cap.append((share or 0.0, cap[0], r, share if visible else None))
    if at_cap:
        _, _, r, share = max(at_cap)
        plain = verdict(r, share)
        lock_share = st.held.get(r, 0.0) / st.total if st is not None and st.total > 0 else 0.0
        if lock_share <= 0:
            return plain
        lock = Evidence(
            f"{r}.held_lock_share",
            lock_share * 100,
            "%",
            f"sessions waited {lock_share:.0%} of their time on locks held across its I/O "
            "(Lock extend: the relation extension lock)",
        )
        return Diagnosis(r, share, (lock, *plain.evidence), notes=plain.notes)

    # 3. the sessions' time; on a saturated host, waits on a device short of its limit or on
    # the client (who shares the CPUs) are the CPU's: the flusher and the client wait for one
    ranked = (
        sorted(((st.share(r), r) for r in RESOURCES if r in st.seconds), reverse=True)
        if st is not None
        else []
    )
    # the CPUs the engine may use are busy: the host's, or the quota of a --cpus cap
    saturated = (math.isfinite(busy) and busy >= CPU_BUSY) or (quota is not None and quota.held)
    cpu_share = st.share(CPU) if st is not None and CPU in st.seconds else None

    def cpu_verdict() -> Diagnosis:
        held = [r for x, r in ranked[:2] if r in (*ROLE_OF, CLIENT) and x >= CONTEXT_SHARE]
        context = [e for r in held for e in resource_evidence(r) if e.name != "host.cpu_busy"]
        seen = {e.name for e in context}
        own = [e for e in resource_evidence(CPU) if e.name not in seen]
        ev = sorted(own, key=lambda e: e.name != "host.cpu_busy") + context
        if not context:
            return Diagnosis(CPU, cpu_share, tuple(ev), notes=tuple(notes))
        # the waits the saturated CPU explains count for it
        share = (cpu_share or 0.0) + sum(st.share(r) for r in held) if st is not None else None
        return Diagnosis(CPU, share, tuple(ev), notes=(*notes, SATURATED))

    if st is not None and ranked:
        lead, r = ranked[0]
        second = ranked[1][0] if len(ranked) > 1 else 0.0
        if lead >= LEAD_SHARE and lead >= LEAD_RATIO * second:
            if not _contradicted(r, devs, busy):
                if saturated and (r == CLIENT or (r in ROLE_OF and not _device_full(r, devs))):
                    return cpu_verdict()
                return verdict(r, lead)
            # 3b. a WAL or data device far from its capacity that the sessions spent most of
            # their time on: its latency (on a saturated host, the CPU's: step 4)
            spare = _far_from_capacity(r, devs) if r in LATENCY_OF else None
            if spare is not None and lead >= LATENCY_SHARE and not saturated:
                return latency_verdict(r, spare, lead, st)

    # 4. the host's CPU alone
    if saturated and not (ranked and ranked[0][1] == CONTENTION and ranked[0][0] >= LEAD_SHARE):
        return cpu_verdict()

    # 5. nothing singled out
    candidates = [Candidate(r, s, tuple(resource_evidence(r))) for s, r in ranked[:2] if s > 0]
    if len(candidates) < 2 and math.isfinite(busy) and all(c.limit != CPU for c in candidates):
        candidates.append(Candidate(CPU, None, tuple(_host_evidence(busy))))
    if len(candidates) < 2:
        for d in sorted(devs, key=lambda d: -d.saturation):
            reads = d.read_iops > d.write_iops  # NaN compares False: writes
            order = (DATA, WAL, TEMP) if reads else (WAL, DATA, TEMP)
            held = next((res for res in order if ROLE_OF[res] in d.roles), None)
            if held and all(c.limit != held for c in candidates):
                found = tuple(_device_evidence(d, ROLE_OF[held]))
                candidates.append(Candidate(held, None, found))
                break
    return Diagnosis(NONE, None, (), tuple(candidates[:2]), tuple(notes))


SATURATED = (
    "on a host whose CPUs are saturated, the time sessions wait on a device short of its limit "
    "or on the client includes the time the log flusher and the client wait for a CPU"
)


def _device_full(resource: str, devs: Sequence[DeviceUse]) -> bool:
    """The role's device at a known cap or busy nearly all the time."""
    d = _device_for(resource, devs)
    return d is not None and (d.saturation >= AT_CAP or d.at_cap)


def _far_from_capacity(resource: str, devs: Sequence[DeviceUse]) -> DeviceUse | None:
    """The role's device when its own counters deny that it was at its capacity (as
    :func:`_contradicted` reads them, and at no known cap), else None (no device recorded)."""
    d = _device_for(resource, devs)
    if d is None or d.at_cap or not _contradicted(resource, devs, math.nan):
        return None
    return d


def _contradicted(resource: str, devs: Sequence[DeviceUse], busy: float) -> bool:
    """A lead the device's or host's own counters deny: a device that was nearly idle, a CPU
    lead on a host mostly idle."""
    if resource in ROLE_OF:
        d = _device_for(resource, devs)
        if d is None:
            return False
        # a throttle is a hard limit; the best an iolab disk test measured (deep queues, large
        # blocks) says little of how slow a device is for one session's commits
        if d.caps is not None and d.caps.word == "cap":
            return d.saturation < DEVICE_IDLE
        # without one, its busy time: a device idle a third of the run had capacity to spare
        return math.isfinite(d.util_pct) and d.util_pct / 100 < DEVICE_SPARE
    if resource == CPU:
        return math.isfinite(busy) and busy < CPU_IDLE
    return False


def _disk(devs: Sequence[DeviceUse], busy: float) -> Diagnosis:
    """A disk profile: the device-side part (busy, queue, latency against its caps)."""
    target = [d for d in devs if "target" in d.roles]
    ev: list[Evidence] = []
    for d in target:
        ev += _device_evidence(d, "target")
    ev += _host_evidence(busy)
    limit = CPU if math.isfinite(busy) and busy >= CPU_BUSY else DEVICE
    return Diagnosis(limit, None, tuple(ev))


# -- cells and findings ----------------------------------------------------------------------


@dataclass(frozen=True)
class CellVerdict:
    label: str
    limit: str  # a limit, or "varies"
    counts: Counter[str]  # verdict -> runs
    runs: int
    evidence: tuple[str, ...] = ()  # the sentences of its first run with the verdict

    @property
    def text(self) -> str:
        if not self.runs:
            return "no diagnosed run"
        if self.limit == VARIES:
            parts = ", ".join(f"{k} in {n}" for k, n in self.counts.most_common())
            return f"varies ({parts} of {self.runs} runs)"
        n = self.counts[self.limit]
        return f"{self.limit} ({n} of {self.runs} runs)"


def cell_verdict(label: str, runs: Sequence[Diagnosis | None]) -> CellVerdict:
    """The verdict most of a cell's runs share (more than half), else "varies"."""
    found = [d for d in runs if d is not None]
    counts: Counter[str] = Counter(d.limit for d in found)
    if not found:
        return CellVerdict(label, NONE, counts, 0)
    top, n = counts.most_common(1)[0]
    limit = top if n * 2 > len(found) else VARIES
    first = next((d for d in found if d.limit == limit), None)
    ev = tuple(first.sentences()) if first is not None else ()
    return CellVerdict(label, limit, counts, len(found), ev)


@dataclass(frozen=True)
class FindingWhy:
    a: str
    b: str
    text: str
    flagged: bool  # the cells' limits contradict the finding's direction
    reason: str = ""  # flagged: why, in a clause ("yet files does not move the wal device")


def finding_why(
    a: CellVerdict, b: CellVerdict, *, times: str, significant: bool, key: str = ""
) -> FindingWhy:
    """Why cell ``a`` came out ``times`` ``b`` ("2.00x faster", "1.16x slower": the ratio in
    words, :func:`iolab.analysis.findings.in_words`): did the limit move between them?

    Flagged: a significant difference between two cells both held by their offered rate
    (neither could go faster), or between two cells both limited by one device role (its
    capacity or its latency) while ``key`` (the matrix key that differs, when known) changes
    another role's place (the change did not touch what limited both)."""
    what = f"{a.label} {times} than {b.label}" + ("" if significant else " (not significant)")
    reasons: list[str] = []
    if a.limit == b.limit and a.limit not in (VARIES, NONE):
        text = f"{what}: both cells were limited by {a.limit}"
        ev = a.evidence[:2]
        if ev:
            text += " (" + "; ".join(ev) + ")"
        if significant and a.limit == RATE:
            reasons.append(
                "both were held by their offered rate, so the difference cannot be speed"
            )
        touched, role = _roles_of_key(key), ROLE_OF_LIMIT.get(a.limit)
        if significant and role and touched and role not in touched:
            reasons.append(f"yet {key} does not move the {role} device")
        text += "".join(f"; {r}" for r in reasons)
    elif a.limit == b.limit:  # none or varies on both sides: nothing to say moved
        said = "no single limit" if a.limit == NONE else "limits that varied between runs"
        text = f"{what}: both cells had {said}, so the evidence does not say why"
    else:
        text = f"{what}: the limit moved from {b.limit} ({b.label}) to {a.limit} ({a.label})"
        if not significant:
            text += ", without a significant change"
    return FindingWhy(a.label, b.label, text, bool(reasons), "; ".join(reasons))


def limit_moved(a: CellVerdict, b: CellVerdict) -> str:
    """What became of the limit from cell ``b`` to cell ``a`` (a finding worded "a ... than b"),
    in a clause: "the limit moved from data-device to cpu", "both limited by cpu", "neither
    cell had a single limit"; "" when a cell has no diagnosed run."""
    if not a.runs or not b.runs:
        return ""
    single = {VARIES, NONE}
    if a.limit in single and b.limit in single:
        return "neither cell had a single limit"
    if a.limit == b.limit:
        return f"both limited by {a.limit}"

    def said(v: CellVerdict) -> str:
        return "no single limit" if v.limit in single else v.limit

    return f"the limit moved from {said(b)} to {said(a)}"


def _roles_of_key(key: str) -> set[str]:
    """The device roles a matrix key moves (``wal_dir`` -> wal; ``data_dirs``, ``files`` ->
    data; ``temp_dir`` -> temp); empty when it names none."""
    k = key.lower()
    found = set()
    if "wal" in k or "log" in k:
        found.add("wal")
    if "data" in k or k == "files":
        found.add("data")
    if "temp" in k:
        found.add("temp")
    return found


@dataclass(frozen=True)
class Why:
    """An experiment's "Why": per cell its limit, per finding whether the limit moved."""

    cells: tuple[CellVerdict, ...]
    findings: tuple[FindingWhy, ...]
    # per cell label, the newest check of a verdict of its runs (`iolab why RUN --check`)
    checked: tuple[tuple[str, str], ...] = ()

    @property
    def flagged(self) -> tuple[FindingWhy, ...]:
        return tuple(f for f in self.findings if f.flagged)


def disk_test_caps(tests: Sequence[tuple[str, float, float]], source: str) -> Caps | None:
    """A device's caps from what an `iolab disk` run measured: ``tests`` as (rw, MB/s, IOPS)
    medians; the best of each direction (None: no test)."""
    if not tests:
        return None

    def best(rw: str, iops: bool) -> float | None:
        found = [t[2] if iops else t[1] for t in tests if t[0] == rw]
        found = [v for v in found if v > 0]
        return max(found) if found else None

    return Caps(
        best("read", True),
        best("write", True),
        best("read", False),
        best("write", False),
        source,
        "best measured",
    )
