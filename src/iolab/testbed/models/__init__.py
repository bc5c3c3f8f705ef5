"""Device models: how long each I/O takes on a disk, an SSD or an array of them.

Pure Python (standard library only), so the nbdkit plugin (:mod:`.nbdkit_plugin`) can load this
file into nbdkit's own interpreter, and the unit tests can drive it without nbdkit.

A model answers one question: an I/O ``(op, offset, length)`` submitted at time ``now``
(seconds, any monotonic clock) completes at what time? :meth:`Model.submit` returns that time
and remembers what the I/O leaves behind (a busy actuator, a moved head, dirty cache). ``op``
is ``read``, ``write``, ``flush`` or ``trim``. The plugin sleeps until that time before
answering, so the emulated device costs in wall-clock time what the model says.

- :class:`Disk`: one actuator. Seek by LBA distance (track-to-track for the nearest, the
  average seek for a random pair: seek time grows with the square root of the distance),
  rotation (half a turn for a random I/O; for a write that follows the previous one on disk
  after the platter has turned on, the rest of the turn), transfer at the sustained rate. A
  read up to ``NEAR`` ahead of the head reads on over the gap into the look-ahead buffer; one
  up to ``NEAR`` behind it finds its data there: the stack's parallel paths deliver a
  sequential stream out of order, as a disk's queue would reorder it. After a read's seek the
  buffer also holds the half track that passed under the head while it waited for its sector.
  I/Os queue on the actuator in the order they arrive.
- :class:`Ssd`: ``channels`` independent channels; an I/O takes the first free one (a large
  one is striped over the channels free first) and costs its latency plus the transfer at the
  channel's share of the bandwidth. Writes go to a write
  cache (when it has room) and drain at the sustained write rate, which over-provisioning
  raises or lowers (write amplification of a greedy garbage collector, (1 + op) / (2 op)).
- :class:`WriteCache`: a disk's or a controller's write-back cache of ``cache_mb``: a write is
  acknowledged when it is in the cache, and the cache frees as the device below writes it; a
  flush waits until the device has written all it acknowledged, unless the cache is battery
  backed (or the SSD has power-loss protection), when a flush costs nothing.
- :class:`Raid`: RAID 0, 1, 10 and 5 over member models with a stripe unit; members work in
  parallel, an I/O completes when its last piece does; mirrors read from the member that is
  free first, write to all; RAID 5 writes a partial stripe by reading old data and parity,
  then writing both (read-modify-write), and a full stripe by writing data and parity.
- :class:`Null`: no cost (to measure the stack's own overhead).

:func:`check` validates a parameter table (raising :class:`ParamError` naming the key, the value
and what is allowed) and fills the defaults; :func:`build` makes the model of a checked table.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from typing import Any

MB = 1_000_000
KIB = 1024
SECTOR = 4096
STRIPE = 16 * KIB  # an SSD stripes a large I/O over its channels in pieces of this
# An I/O within this of the head's position needs no seek: the disk's look-ahead window, which
# also absorbs the reordering of a sequential stream by the parallel paths of the stack (nbdfuse's
# connections and FUSE threads deliver a queue of 1 MiB reads in any order)
NEAR = 4 * 1024 * KIB
OPS = ("read", "write", "flush", "trim")


class Model:
    """A device: :meth:`submit` returns when an I/O submitted at ``now`` completes."""

    size: int

    def submit(self, op: str, offset: int, length: int, now: float) -> float:
        raise NotImplementedError

    def free_at(self) -> float:
        """When the device has finished everything submitted so far."""
        raise NotImplementedError

    def turn(self) -> float:
        """How long rewriting what was just read waits (a disk: a turn of the platter)."""
        return 0.0


class Null(Model):
    def __init__(self, size: int) -> None:
        self.size = size

    def submit(self, op: str, offset: int, length: int, now: float) -> float:
        return now

    def free_at(self) -> float:
        return 0.0


class Disk(Model):
    """A rotating disk without a cache (wrap it in :class:`WriteCache` for one)."""

    def __init__(
        self, size: int, rpm: int, seek_ms: float, track_to_track_ms: float, mb_s: float
    ) -> None:
        self.size = size
        self.rotation = 60.0 / rpm
        self.t2t = track_to_track_ms / 1000
        # E[sqrt(|U - V|)] = 8/15 for U, V uniform on [0, 1]: the full stroke that makes a
        # random pair's seek the average one
        self.full = self.t2t + (seek_ms / 1000 - self.t2t) * 15 / 8
        self.rate = mb_s * MB
        self.head = 0  # byte offset after the last I/O
        self.buffered_from = 0  # the look-ahead buffer holds [buffered_from, head)
        self.busy_until = 0.0

    def seek(self, distance: int) -> float:
        if distance <= 0:
            return 0.0
        return self.t2t + (self.full - self.t2t) * math.sqrt(min(1.0, distance / self.size))

    def service(self, op: str, offset: int, length: int, start: float) -> float:
        """Seconds the actuator spends on this I/O when it starts at ``start``."""
        transfer = length / self.rate
        gap = offset - self.head
        if op == "read" and -NEAR <= gap <= NEAR:
            # ahead: read on over the gap into the look-ahead buffer; behind, in what the
            # buffer holds: no platter time (what it lacks beyond the head is read on)
            if gap >= 0:
                return (gap + length) / self.rate
            if offset >= self.buffered_from:
                return max(0, offset + length - self.head) / self.rate
        if abs(gap) > NEAR or op == "read":
            return self.seek(abs(gap)) + self.rotation / 2 + transfer
        if op == "write" and start > self.busy_until:
            # the sector after the last I/O passed under the head while the disk was idle:
            # wait until it comes round again
            idle = start - self.busy_until
            return self.rotation - math.fmod(idle, self.rotation) + transfer
        return transfer

    def turn(self) -> float:
        return self.rotation

    def submit(self, op: str, offset: int, length: int, now: float) -> float:
        if op == "flush":
            return max(now, self.busy_until)
        if op == "trim":
            return now
        start = max(now, self.busy_until)
        done = start + self.service(op, offset, length, start)
        end = offset + length
        gap = offset - self.head
        if op == "read" and -NEAR <= gap <= NEAR and (gap >= 0 or offset >= self.buffered_from):
            self.head = max(self.head, end)  # read on: the buffer runs on from buffered_from
        else:
            # a seek, or a write: the buffer starts afresh. A read waits half a turn for its
            # sector after the seek, and the half track before it passes under the head
            # meanwhile: the buffer keeps it (read look-behind), so the piece of a stream the
            # stack delivers just after the one that made the seek costs no second seek
            behind = int(self.rotation / 2 * self.rate) if op == "read" else 0
            self.buffered_from = max(0, offset - behind)
            self.head = end
        self.busy_until = done
        return done

    def free_at(self) -> float:
        return self.busy_until


class Ssd(Model):
    """Flash behind ``channels`` channels (its write cache is a :class:`WriteCache` around it)."""

    def __init__(
        self,
        size: int,
        read_us: float,
        write_us: float,
        channels: int,
        mb_s: float,
        sustained_write_mb_s: float,
        over_provisioning: float,
    ) -> None:
        self.size = size
        self.read = read_us / 1e6
        self.write = write_us / 1e6
        self.channel_rate = mb_s * MB / channels
        self.channels = [0.0] * channels
        wa = (1 + over_provisioning) / (2 * over_provisioning)
        self.drain_rate = sustained_write_mb_s * MB / max(1.0, wa)
        self.drain_until = 0.0

    def submit(self, op: str, offset: int, length: int, now: float) -> float:
        if op == "flush":
            return max(now, self.free_at())
        if op == "trim":
            return now
        # a large I/O is striped over the channels free first, in pieces of at least STRIPE
        pieces = max(1, min(len(self.channels), length // STRIPE))
        free = sorted(range(len(self.channels)), key=self.channels.__getitem__)[:pieces]
        each = length / pieces
        extra = max(0.0, each - SECTOR) / self.channel_rate
        if op != "read":
            # programming flash is also paced by the sustained rate over all channels
            self.drain_until = max(now, self.drain_until) + length / self.drain_rate
        done = now
        for i in free:
            start = max(now, self.channels[i])
            if op == "read":
                end = start + self.read + extra
            else:
                end = max(start + self.write + extra, self.drain_until)
            self.channels[i] = end
            done = max(done, end)
        return done

    def free_at(self) -> float:
        return max(self.channels)


class WriteCache(Model):
    """A write-back cache of ``cache_bytes`` in front of ``inner``.

    A write is acknowledged once it is in the cache (after ``ack`` seconds) and passed to the
    device below at once, which queues it; it leaves the cache when the device below has
    written it. A write that does not fit waits for room. ``protected``: battery backed, so a
    flush is done at once; else a flush waits until the device below has written everything.
    """

    def __init__(self, inner: Model, cache_bytes: int, protected: bool, ack: float) -> None:
        self.inner = inner
        self.size = inner.size
        self.capacity = cache_bytes
        self.protected = protected
        self.ack = ack
        self.dirty: deque[tuple[float, int]] = deque()  # (written below at, bytes), in order
        self.dirty_bytes = 0
        self.flushed_until = 0.0

    def _retire(self, now: float) -> None:
        while self.dirty and self.dirty[0][0] <= now:
            self.dirty_bytes -= self.dirty.popleft()[1]

    def submit(self, op: str, offset: int, length: int, now: float) -> float:
        if op == "flush":
            if self.protected:
                return now
            return max(now, self.free_at(), self.inner.submit("flush", 0, 0, now))
        if op != "write" or length > self.capacity:
            return self.inner.submit(op, offset, length, now)
        self._retire(now)
        at = now
        # wait for room: cached writes leave in the order they were written below
        pending = list(self.dirty)
        need = self.dirty_bytes + length - self.capacity
        for written, nbytes in pending:
            if need <= 0:
                break
            at = max(at, written)
            need -= nbytes
        below = self.inner.submit("write", offset, length, at)
        # the device below may reorder nothing, but keep the deque sorted for _retire
        self.dirty.append((max(below, self.dirty[-1][0]) if self.dirty else below, length))
        self.dirty_bytes += length
        return at + self.ack

    def free_at(self) -> float:
        return self.dirty[-1][0] if self.dirty else self.inner.free_at()

    def turn(self) -> float:
        return self.inner.turn()


class Raid(Model):
    """RAID ``level`` (0, 1, 10 or 5) over ``members`` with a stripe unit of ``stripe`` bytes."""

    def __init__(self, level: int, members: list[Model], stripe: int) -> None:
        self.level = level
        self.members = members
        self.stripe = stripe
        n = len(members)
        data = {0: n, 1: 1, 10: n // 2, 5: n - 1}[level]
        self.data = data
        self.size = min(m.size for m in members) * data

    def _mirrors(self, column: int) -> list[Model]:
        if self.level == 1:
            return self.members
        if self.level == 10:
            return self.members[2 * column : 2 * column + 2]
        return [self.members[column]]

    def _pieces(self, offset: int, length: int) -> list[tuple[int, int, int, int]]:
        """(stripe row, data column, member offset, length) of each stripe-unit piece."""
        out = []
        end = offset + length
        while offset < end:
            chunk, within = divmod(offset, self.stripe)
            take = min(end - offset, self.stripe - within)
            row, column = divmod(chunk, self.data)
            out.append((row, column, row * self.stripe + within, take))
            offset += take
        return out

    def _raid5_member(self, row: int, column: int) -> tuple[int, int]:
        """(data member, parity member) of a RAID 5 row (left-symmetric parity rotation)."""
        n = len(self.members)
        parity = (n - 1) - row % n
        return (parity + 1 + column) % n, parity

    def submit(self, op: str, offset: int, length: int, now: float) -> float:
        if op == "flush":
            return max([now] + [m.submit("flush", 0, 0, now) for m in self.members])
        done = now
        if self.level == 5:
            return self._raid5(op, offset, length, now)
        for _row, column, moff, take in self._pieces(offset, length):
            mirrors = self._mirrors(column)
            if op == "read":
                member = min(mirrors, key=lambda m: m.free_at())
                done = max(done, member.submit(op, moff, take, now))
            else:
                for m in mirrors:
                    done = max(done, m.submit(op, moff, take, now))
        return done

    def _raid5(self, op: str, offset: int, length: int, now: float) -> float:
        done = now
        rows: dict[int, list[tuple[int, int, int]]] = {}
        for row, column, moff, take in self._pieces(offset, length):
            rows.setdefault(row, []).append((column, moff, take))
        for row, pieces in rows.items():
            if op != "write":
                for column, moff, take in pieces:
                    member, _ = self._raid5_member(row, column)
                    done = max(done, self.members[member].submit(op, moff, take, now))
                continue
            _, parity = self._raid5_member(row, 0)
            lo = min(moff for _, moff, _ in pieces)
            hi = max(moff + take for _, moff, take in pieces)
            full = sum(take for _, _, take in pieces) == self.stripe * self.data
            ready = now
            if not full:  # read-modify-write: old data and old parity first
                reads = [
                    self.members[self._raid5_member(row, c)[0]].submit("read", m, t, now)
                    for c, m, t in pieces
                ]
                reads.append(self.members[parity].submit("read", lo, hi - lo, now))
                ready = max(reads)
            for column, moff, take in pieces:
                disk = self.members[self._raid5_member(row, column)[0]]
                at = ready + (0.0 if full else disk.turn())  # the sectors come round again
                done = max(done, disk.submit("write", moff, take, at))
            at = ready + (0.0 if full else self.members[parity].turn())
            done = max(done, self.members[parity].submit("write", lo, hi - lo, at))
        return done

    def free_at(self) -> float:
        return max(m.free_at() for m in self.members)


# --- parameters ------------------------------------------------------------------------------


class ParamError(ValueError):
    """A bad model parameter: ``key`` (relative to the device's table), ``value``, ``allowed``."""

    def __init__(self, key: str, value: object, allowed: str) -> None:
        super().__init__(f"{key}: {value!r}; {allowed}")
        self.key = key
        self.value = value
        self.allowed = allowed


MODELS = ("hdd", "ssd", "raid0", "raid1", "raid10", "raid5", "null")
# key -> (default, what it is); None default: required
HDD: dict[str, tuple[object, str]] = {
    "rpm": (7200, "spindle speed, revolutions per minute"),
    "seek_ms": (8.5, "average seek time, ms"),
    "track_to_track_ms": (1.0, "track-to-track seek time, ms"),
    "mb_s": (150, "sustained transfer rate, MB/s"),
    "cache_mb": (0, "write-back cache, MB (0: writes go to the platter before they are done)"),
    "battery_backed": (False, "the cache survives power loss, so a flush does not wait"),
}
SSD: dict[str, tuple[object, str]] = {
    "read_us": (100, "latency of a 4 KiB read, microseconds"),
    "write_us": (200, "latency of a 4 KiB write to flash, microseconds"),
    "channels": (8, "flash channels working in parallel"),
    "mb_s": (250, "read bandwidth over all channels, MB/s"),
    "sustained_write_mb_s": (
        100,
        "write rate once the cache is full at write amplification 1 (100 % spare), MB/s",
    ),
    "over_provisioning": (0.28, "spare flash as a fraction of the capacity (0.07 to 4)"),
    "cache_mb": (0, "write cache, MB"),
    "power_loss_protection": (False, "the cache survives power loss, so a flush does not wait"),
}
RAID: dict[str, tuple[object, str]] = {
    "members": (None, "number of member devices"),
    "stripe_kb": (64, "stripe unit, KiB"),
    "cache_mb": (0, "controller write-back cache, MB"),
    "battery_backed": (False, "the controller cache survives power loss"),
    "member": (None, "the member device: a table with model = 'hdd' or 'ssd' and its keys"),
}
KEYS = {"hdd": HDD, "ssd": SSD, "null": {}}
CACHE_ACK = {"hdd": 50e-6, "ssd": 20e-6, "raid": 30e-6}  # acknowledging a cached write
MEMBERS = ("hdd", "ssd")  # what a RAID's member can be
MIN_MEMBERS = {"raid0": 2, "raid1": 2, "raid10": 4, "raid5": 3}


def keys_of(model: str) -> dict[str, tuple[object, str]]:
    return RAID if model.startswith("raid") else KEYS[model]


def _number(key: str, value: object, lo: float, hi: float, *, whole: bool = False) -> float:
    kind = "a whole number" if whole else "a number"
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if whole:
        ok = ok and isinstance(value, int)
    if not ok or not lo <= float(value) <= hi:  # type: ignore[arg-type]
        raise ParamError(key, value, f"give {kind} from {lo:g} to {hi:g}")
    return float(value)  # type: ignore[arg-type]


LIMITS: dict[str, tuple[float, float, bool]] = {
    "rpm": (1000, 20000, True),
    "seek_ms": (0.1, 50, False),
    "track_to_track_ms": (0, 10, False),
    "mb_s": (1, 20000, False),
    "cache_mb": (0, 65536, False),
    "read_us": (1, 100000, False),
    "write_us": (1, 100000, False),
    "channels": (1, 256, True),
    "sustained_write_mb_s": (1, 20000, False),
    "over_provisioning": (0.07, 4, False),
    "members": (2, 64, True),
    "stripe_kb": (4, 16384, True),
}


def check(table: Mapping[str, Any], where: str = "") -> dict[str, Any]:
    """A model table with its defaults filled in; :class:`ParamError` (key relative to the
    device's table, ``member.`` for a RAID member's) for the first mistake."""
    model = table.get("model")
    if where and model not in MEMBERS:  # what a member can be, not every model's name
        # a null member would make an array that costs nothing: use model = "null" itself
        raise ParamError(f"{where}model", model, "a member is one device: 'hdd' or 'ssd'")
    if model not in MODELS:
        raise ParamError(f"{where}model", model, "choose one of: " + ", ".join(MODELS))
    known = keys_of(model)
    out: dict[str, Any] = {"model": model}
    for key, value in table.items():
        if key == "model":
            continue
        if key not in known:
            allowed = ", ".join(known) or "none"
            raise ParamError(f"{where}{key}", value, f"keys of a {model} model: {allowed}")
    for key, (default, _) in known.items():
        value = table.get(key, default)
        if value is None:
            raise ParamError(f"{where}{key}", None, f"give {known[key][1]}")
        if key == "member":
            if not isinstance(value, Mapping):
                raise ParamError(f"{where}member", value, "give a table: model = 'hdd' ...")
            out[key] = check(value, f"{where}member.")
        elif isinstance(default, bool):
            if not isinstance(value, bool):
                raise ParamError(f"{where}{key}", value, "give true or false")
            out[key] = value
        else:
            lo, hi, whole = LIMITS[key]
            number = _number(f"{where}{key}", value, lo, hi, whole=whole)
            out[key] = int(number) if whole else number
    if model in MIN_MEMBERS:
        n = out["members"]
        if n < MIN_MEMBERS[model] or (model == "raid10" and n % 2):
            need = "an even number >= 4" if model == "raid10" else f">= {MIN_MEMBERS[model]}"
            raise ParamError(f"{where}members", n, f"a {model} needs {need} members")
    if model == "hdd" and out["track_to_track_ms"] > out["seek_ms"]:
        raise ParamError(
            f"{where}track_to_track_ms", out["track_to_track_ms"], "give at most seek_ms"
        )
    return out


def member_size(params: Mapping[str, Any], size: int) -> int:
    """The size of each member of an array of ``size`` bytes."""
    n = int(params["members"])
    per = {"raid0": n, "raid1": 1, "raid10": n // 2, "raid5": n - 1}[params["model"]]
    stripe = int(params["stripe_kb"]) * KIB
    rows = -(-size // (stripe * per))
    return rows * stripe


def _cached(inner: Model, cache_mb: float, protected: bool, ack: float) -> Model:
    if cache_mb <= 0:
        return inner
    return WriteCache(inner, int(cache_mb * MB), protected, ack)


def build(params: Mapping[str, Any], size: int) -> Model:
    """The model of a checked parameter table (see :func:`check`) for a device of ``size``."""
    model = params["model"]
    if model == "null":
        return Null(size)
    if model == "hdd":
        disk = Disk(
            size,
            params["rpm"],
            params["seek_ms"],
            params["track_to_track_ms"],
            params["mb_s"],
        )
        return _cached(disk, params["cache_mb"], params["battery_backed"], CACHE_ACK["hdd"])
    if model == "ssd":
        ssd = Ssd(
            size,
            params["read_us"],
            params["write_us"],
            params["channels"],
            params["mb_s"],
            params["sustained_write_mb_s"],
            params["over_provisioning"],
        )
        return _cached(ssd, params["cache_mb"], params["power_loss_protection"], CACHE_ACK["ssd"])
    level = int(model.removeprefix("raid"))
    each = member_size(params, size)
    members = [build(params["member"], each) for _ in range(params["members"])]
    raid = Raid(level, members, params["stripe_kb"] * KIB)
    return _cached(raid, params["cache_mb"], params["battery_backed"], CACHE_ACK["raid"])


def describe(params: Mapping[str, Any]) -> str:
    """``raid10 of 8 x hdd 7200 rpm ...`` in a line."""
    model = params["model"]
    if model == "null":
        return "null (no cost)"
    if model == "hdd":
        text = (
            f"hdd {params['rpm']} rpm, seek {params['seek_ms']:g} ms "
            f"(track-to-track {params['track_to_track_ms']:g}), {params['mb_s']:g} MB/s"
        )
    elif model == "ssd":
        text = (
            f"ssd read {params['read_us']:g} µs, write {params['write_us']:g} µs, "
            f"{params['channels']} channels, {params['mb_s']:g} MB/s, sustained write "
            f"{params['sustained_write_mb_s']:g} MB/s, {params['over_provisioning']:.0%} spare"
        )
    else:
        text = (
            f"{model} of {params['members']} x ({describe(params['member'])}), "
            f"stripe {params['stripe_kb']} KiB"
        )
    if params.get("cache_mb"):
        safe = params.get("battery_backed") or params.get("power_loss_protection")
        text += f", cache {params['cache_mb']:g} MB" + (" battery-backed" if safe else "")
    return text
