"""Bad experiment files, as data: each row is a file (or a piece of one) and the key the error
must name. Every row goes through `iolab plan` and `iolab run`: both must refuse it the same
way (exit 2, one line naming the key, no traceback) before any run is recorded.

The directory of each file holds ``data`` and ``wal`` (empty) and ``full`` (holding a file).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.bad_input import assert_refused, iolab, recorded

pytestmark = pytest.mark.integration

POPULATE = 'kind = "populate"\nrows = 100\nconnections = 2'
DISK = 'kind = "disk"\nsize = "16MiB"\nruns = 1\nduration = 1'
TPCH = 'kind = "tpch"\nscale_factor = 0.01'


def exp(
    workload: str = POPULATE,
    layout: str = 'data_dirs = ["data"]',
    experiment: str = "",
    extra: str = "",
) -> str:
    return (
        f'[experiment]\nname = "bad"\n{experiment}\n[workload]\n{workload}\n'
        f"[layouts.a]\n{layout}\n[isolation]\nsettle_seconds = 0\n{extra}\n"
    )


def pg(settings: str) -> str:
    return exp(
        'kind = "populate"\nengine = "postgres"\nrows = 100\nconnections = 2',
        f'data_dirs = ["data"]\nsettings = {{ {settings} }}',
    )


def matrix(body: str, workload: str = POPULATE) -> str:
    return exp(workload, extra=f"[matrix]\n{body}")


BIG = "\n".join(f'"settings.k{i}" = [{", ".join(str(v) for v in range(10))}]' for i in range(6))

CASES: list[tuple[str, str, str]] = [
    # [experiment]
    (
        "no-experiment",
        '[workload]\nkind = "disk"\n[layouts.a]\ndata_dirs = ["data"]\n',
        "experiment",
    ),
    ("empty-name", exp().replace('name = "bad"', 'name = ""'), "experiment.name"),
    ("repetitions-zero", exp(experiment="repetitions = 0"), "experiment.repetitions"),
    ("repetitions-word", exp(experiment='repetitions = "many"'), "experiment.repetitions"),
    ("order", exp(experiment='order = "random"'), "experiment.order"),
    ("on-failure", exp(experiment='on_failure = "ignore"'), "experiment.on_failure"),
    ("retries", exp(experiment="retries = -1"), "experiment.retries"),
    ("timeout-forever", exp(experiment='timeout = "forever"'), "experiment.timeout"),
    ("timeout-zero", exp(experiment="timeout = 0"), "experiment.timeout"),
    ("timeout-negative", exp(experiment='timeout = "-5s"'), "experiment.timeout"),
    ("ci-target", exp(experiment="ci_target = 2"), "experiment.ci_target"),
    ("min-repetitions", exp(experiment="min_repetitions = 1"), "experiment.min_repetitions"),
    (
        "min-above-max",
        exp(experiment="min_repetitions = 5\nmax_repetitions = 3"),
        "experiment.min_repetitions",
    ),
    ("unknown-experiment-key", exp(experiment='colour = "red"'), "experiment.colour"),
    ("baseline-not-in-matrix", exp(experiment="baseline = { files = 1 }"), "experiment.baseline"),
    ("baseline-every", exp(experiment="baseline_every = -1"), "experiment.baseline_every"),
    ("auto-with-disk", exp(DISK, experiment='repetitions = "auto"'), "experiment.repetitions"),
    # [workload]
    ("no-kind", exp("rows = 100"), "workload.kind"),
    ("kind", exp('kind = "fio"'), "workload.kind"),
    ("engine", exp('kind = "populate"\nengine = "oracle"'), "workload.engine"),
    ("engine-duckdb", exp('kind = "populate"\nengine = "duckdb"'), "workload.engine"),
    ("rows-zero", exp('kind = "populate"\nrows = 0'), "workload.rows"),
    ("rows-word", exp('kind = "populate"\nrows = "many"'), "workload.rows"),
    ("rows-float", exp('kind = "populate"\nrows = 1e30'), "workload.rows"),
    ("rows-below-connections", exp('kind = "populate"\nrows = 4'), "workload.rows"),
    ("bytes-word", exp('kind = "populate"\nbytes = "lots"'), "workload.bytes"),
    ("connections", exp('kind = "populate"\nconnections = 0'), "workload.connections"),
    (
        "checkpoint-every",
        exp('kind = "populate"\nrows = 100\nconnections = 2\ncheckpoint_every = 0'),
        "workload.checkpoint_every",
    ),
    (
        "presize-word",
        exp('kind = "populate"\nrows = 100\nconnections = 2\npresize_wal = "lots"'),
        "workload.presize_wal",
    ),
    (
        "presize-too-large",
        exp('kind = "populate"\nrows = 100\nconnections = 2\npresize_wal = "1000TiB"'),
        "workload.presize_wal",
    ),
    (
        "steady-window",
        exp('kind = "populate"\nrows = 100\nconnections = 2\nsteady_window = 1'),
        "workload.steady_window",
    ),
    (
        "steady-tolerance",
        exp('kind = "populate"\nrows = 100\nconnections = 2\nsteady_tolerance = 101'),
        "workload.steady_tolerance",
    ),
    ("commit-every", exp(POPULATE + "\ncommit_every = 0"), "workload.commit_every"),
    ("method", exp(POPULATE + '\nmethod = "bulk"'), "workload.method"),
    ("method-copy-sqlite", exp(POPULATE + '\nmethod = "copy"'), "workload.method"),
    ("mode", exp(POPULATE + '\nmode = "proc"'), "workload.mode"),
    ("key", exp(POPULATE + '\nkey = "uuid"'), "workload.key"),
    ("batch", exp(POPULATE + "\nbatch = 0"), "workload.batch"),
    ("unknown-workload-key", exp(POPULATE + "\nrowz = 5"), "workload.rowz"),
    ("pg-bin-with-sqlite", exp(POPULATE + '\npg_bin = "/usr/bin"'), "workload.pg_bin"),
    # populate that cannot fit (issue 14 item 3)
    (
        "rows-too-many",
        exp('kind = "populate"\nrows = 1_000_000_000_000_000'),
        "layouts.a.data_dirs",
    ),
    ("bytes-too-many", exp('kind = "populate"\nbytes = "1PB"'), "layouts.a.data_dirs"),
    ("matrix-rows-too-many", matrix("rows = [100, 1_000_000_000_000_000]"), "layouts.a.data_dirs"),
    # latency, sample_interval and seed 003's keys, in [workload] and in the matrix
    ("rate-inf", exp(POPULATE + "\nrate = inf"), "workload.rate: inf is not allowed"),
    ("rate-zero", exp(POPULATE + "\nrate = 0"), "workload.rate: 0 is not allowed"),
    ("rate-tiny", exp(POPULATE + "\nrate = -1e-300"), "workload.rate: -1e-300 is not allowed"),
    ("warmup-float", exp(POPULATE + "\nwarmup = 0.5"), "workload.warmup: 0.5 is not allowed"),
    ("warmup-word", exp(POPULATE + '\nwarmup = "lots"'), "workload.warmup: 'lots'"),
    (
        "warmup-as-long-as-duration",
        exp('kind = "populate"\nconnections = 2\nduration = "5s"\nwarmup = "5s"'),
        "workload.warmup: '5s' is not allowed; the warm-up is as long as the run",
    ),
    (
        "duration-and-rows",
        exp(POPULATE + '\nduration = "5s"'),
        "workload.duration: '5s' is not allowed; give either rows/bytes or a duration",
    ),
    (
        "duration-zero",
        exp('kind = "populate"\nconnections = 2\nduration = 0'),
        "workload.duration: 0 is not allowed",
    ),
    ("tpch-warmup", exp(TPCH + '\nwarmup = "5s"'), "workload.warmup: '5s' is not allowed"),
    (
        "sample-interval-short",
        exp(POPULATE + '\nsample_interval = "10ms"'),
        "workload.sample_interval: '10ms' is not allowed",
    ),
    (
        "sample-interval-negative",
        exp(POPULATE + "\nsample_interval = -1"),
        "workload.sample_interval: -1 is not allowed",
    ),
    (
        "disk-sample-interval",
        exp(DISK + '\nsample_interval = "1s"'),
        "workload.sample_interval",
    ),
    (
        "checkpoint-every-word",
        exp(POPULATE + '\ncheckpoint_every = "soon"'),
        "workload.checkpoint_every: 'soon'",
    ),
    (
        "disk-checkpoint-every",
        exp(DISK + '\ncheckpoint_every = "5s"'),
        "workload.checkpoint_every",
    ),
    ("presize-negative", exp(POPULATE + '\npresize_wal = "-1MiB"'), "workload.presize_wal"),
    (
        "steady-window-word",
        exp(POPULATE + '\nsteady_window = "many"'),
        "workload.steady_window: 'many'",
    ),
    (
        "steady-tolerance-nan",
        exp(POPULATE + "\nsteady_tolerance = nan"),
        "workload.steady_tolerance: nan",
    ),
    (
        "matrix-checkpoint-every",
        matrix('checkpoint_every = ["off", "never"]'),
        "checkpoint_every: 'never' is not allowed",
    ),
    (
        "matrix-presize-wal",
        matrix('presize_wal = ["off", "huge"]'),
        "presize_wal: 'huge' is not allowed",
    ),
    ("matrix-rate", matrix("rate = [100, 0]"), "rate: 0 is not allowed"),
    ("matrix-warmup", matrix('warmup = ["1s", 0.5]'), "warmup: 0.5 is not allowed"),
    (
        "matrix-sample-interval",
        matrix('sample_interval = ["1s", "1ms"]'),
        "sample_interval: '1ms' is not allowed",
    ),
    ("matrix-steady-window", matrix("steady_window = [5, 1]"), "steady_window: 1 is not allowed"),
    # disk
    ("disk-duration-short", exp('kind = "disk"\nduration = "0.5s"'), "workload.duration"),
    ("disk-duration-word", exp('kind = "disk"\nduration = "soon"'), "workload.duration"),
    ("disk-duration-zero", exp('kind = "disk"\nduration = 0'), "workload.duration"),
    ("disk-interval", exp('kind = "disk"\ninterval = "-1s"'), "workload.interval"),
    ("disk-profile", exp('kind = "disk"\nprofile = "fast"'), "workload.profile"),
    ("disk-size-word", exp('kind = "disk"\nsize = "huge"'), "workload.size"),
    ("disk-size-too-big", exp('kind = "disk"\nsize = "100PB"'), "workload.size"),
    ("disk-runs", exp('kind = "disk"\nruns = 0'), "workload.runs"),
    ("disk-data", exp('kind = "disk"\ndata = "ones"'), "workload.data"),
    (
        "disk-non-empty-ok-but-missing",
        exp(DISK, 'data_dirs = ["nowhere"]'),
        "layouts.a.data_dirs[0]",
    ),
    # tpch
    ("tpch-sf", exp('kind = "tpch"\nscale_factor = 0'), "workload.scale_factor"),
    ("tpch-engine", exp('kind = "tpch"\nengine = "sqlite"'), "workload.engine"),
    ("tpch-compression", exp(TPCH + '\ncompression = "max"'), "workload.compression"),
    ("tpch-timeout", exp(TPCH + '\ntimeout = "never"'), "workload.timeout"),
    ("tpch-queries", exp(TPCH + "\nqueries = [23]"), "workload.queries"),
    ("memory-word", exp(POPULATE + '\nmemory = "lots"'), "workload.memory: 'lots'"),
    ("cpus-zero", exp(TPCH + "\ncpus = 0"), "workload.cpus: 0 is not allowed"),
    ("cpus-true", exp(TPCH + "\ncpus = true"), "workload.cpus: True is not allowed"),
    (
        "memory-below-shared-buffers",
        exp('kind = "populate"\nengine = "postgres"\nrows = 100\nmemory = "64MiB"'),
        "workload.memory: '64MiB' is not allowed; PostgreSQL needs its shared_buffers",
    ),
    (
        "matrix-memory",
        matrix('memory = ["1GiB", "64TiB"]'),
        "matrix.memory: '64TiB' is not allowed; this machine has",
    ),
    ("matrix-cpus", matrix("cpus = [1, -2]"), "cpus: -2 is not allowed"),
    # tpcc
    ("tpcc-engine", exp('kind = "tpcc"\nengine = "duckdb"'), "workload.engine"),
    ("tpcc-warehouses", exp('kind = "tpcc"\nwarehouses = 0'), "workload.warehouses"),
    ("tpcc-memory", exp('kind = "tpcc"\nmemory = "lots"'), "workload.memory: 'lots'"),
    ("tpcc-mix", exp('kind = "tpcc"\nmix = "50,50,1,0,0"'), "workload.mix"),
    ("tpcc-warmup", exp('kind = "tpcc"\nwarmup = "soon"'), "workload.warmup"),
    # [layouts]
    ("no-layouts", '[experiment]\nname = "bad"\n[workload]\nkind = "disk"\n', "layouts"),
    ("data-dirs-empty", exp(layout="data_dirs = []"), "layouts.a.data_dirs"),
    ("data-dir-missing", exp(layout='data_dirs = ["nowhere"]'), "layouts.a.data_dirs[0]"),
    ("data-dir-not-empty", exp(layout='data_dirs = ["full"]'), "layouts.a.data_dirs"),
    ("files-zero", exp(layout='data_dirs = ["data"]\nfiles = 0'), "layouts.a.files"),
    ("unknown-layout-key", exp(layout='data_dirs = ["data"]\nspeed = 5'), "layouts.a.speed"),
    ("wal-dir-sqlite", exp(layout='data_dirs = ["data"]\nwal_dir = "wal"'), "layouts.a.wal_dir"),
    (
        "wal-dir-missing",
        exp(layout='data_dirs = ["data"]\nwal_dir = "nowhere"'),
        "layouts.a.wal_dir",
    ),
    ("device-unknown", exp(layout='data_dirs = ["device:nothere"]'), "layouts.a.data_dirs[0]"),
    (
        "sqlite-setting-unknown",
        exp(layout='data_dirs = ["data"]\nsettings = { shared_buffers = "1GB" }'),
        "layouts.a.settings.shared_buffers",
    ),
    (
        "sqlite-setting-value",
        exp(layout='data_dirs = ["data"]\nsettings = { journal_mode = "banana" }'),
        "layouts.a.settings.journal_mode",
    ),
    # engine settings read by the engine (issue 14 item 8)
    ("pg-shared-buffers", pg('shared_buffers = "banana"'), "layouts.a.settings.shared_buffers"),
    ("pg-range", pg('work_mem = "1"'), "layouts.a.settings.work_mem"),
    ("pg-enum", pg('wal_level = "most"'), "layouts.a.settings.wal_level"),
    ("pg-unknown", pg('shared_bufers = "1GB"'), "layouts.a.settings.shared_bufers"),
    ("pg-controlled", pg("port = 6000"), "layouts.a.settings.port"),
    (
        "mariadb-matrix",
        matrix(
            '"settings.innodb_buffer_pool_size" = ["128M", "banana"]',
            'kind = "populate"\nengine = "mariadb"\nrows = 100\nconnections = 2',
        ),
        "matrix.settings.innodb_buffer_pool_size",
    ),
    (
        "mariadb-layout-variable",
        exp(
            'kind = "populate"\nengine = "mariadb"\nrows = 100\nconnections = 2',
            'data_dirs = ["data"]\nsettings = { datadir = "/tmp" }',
        ),
        "layouts.a.settings.datadir",
    ),
    # [matrix]
    ("matrix-layout", matrix('layout = ["b"]'), "matrix.layout[0]"),
    ("matrix-empty", matrix("files = []"), "matrix.files"),
    ("matrix-unknown", matrix("colour = [1]"), "matrix.colour"),
    ("matrix-twice", matrix("files = [1, 1]"), "matrix.files"),
    ("matrix-rows-zero", matrix("rows = [0]"), "rows"),
    ("matrix-connections", matrix("connections = [2, 0]"), "connections"),
    (
        "two-layouts-no-matrix",
        exp(extra='[layouts.b]\ndata_dirs = ["data"]'),
        "matrix.layout",
    ),
    # issue 14 item 9: counted before it is expanded
    ("matrix-million-cells", matrix(BIG), "1,000,000 cells"),
    # [isolation], [hooks], [devices], the file itself
    (
        "settle",
        exp(extra="").replace("settle_seconds = 0", "settle_seconds = -1"),
        "isolation.settle_seconds",
    ),
    (
        "drop-caches",
        exp(extra="").replace("settle_seconds = 0", 'drop_caches = "perhaps"'),
        "isolation.drop_caches",
    ),
    ("hook", exp(extra="[hooks]\non_complete = 5"), "hooks.on_complete"),
    ("device-size", exp(extra='[devices.ssd]\nfilesystem = "ext4"'), "devices.ssd.size"),
    (
        "device-fs",
        exp(extra='[devices.ssd]\nsize = "1GiB"\nfilesystem = "fat"'),
        "devices.ssd.filesystem",
    ),
    (
        "device-backing-missing",
        exp(
            DISK,
            'data_dirs = ["device:ssd"]',
            extra='[devices.ssd]\nsize = "1GiB"\nbacking_dir = "/nonexistent/iolab"',
        ),
        "devices.ssd.backing_dir",
    ),
    ("toml-syntax", exp() + "\n[broken\n", "TOML"),
    # [fleet] and the matrix key host: names and addresses as the fleet commands take them
    ("fleet-address", exp(extra='[fleet]\naddress = "not an address"'), "fleet.address"),
    ("fleet-address-port", exp(extra='[fleet]\naddress = "10.0.0.1:99999"'), "fleet.address"),
    ("fleet-hosts-slash", exp(extra='[fleet]\nhosts = ["a/b"]'), "fleet.hosts[0]: 'a/b'"),
    ("matrix-host-markup", matrix('host = ["<b>db1</b>"]'), "matrix.host[0]: '<b>db1</b>'"),
    ("matrix-host-newline", matrix('host = ["x\\ny"]'), "matrix.host[0]: 'x\\ny'"),
]


@pytest.fixture
def where(open_tmp: Path) -> Path:
    for name in ("data", "wal", "full"):
        (open_tmp / name).mkdir(mode=0o755)
    (open_tmp / "full" / "theirs.txt").write_text("not iolab's")
    return open_tmp


@pytest.mark.parametrize("command", ["plan", "run"])
@pytest.mark.parametrize(("text", "names"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_bad_file_is_refused_before_any_run(
    where: Path, tmp_path: Path, command: str, text: str, names: str
) -> None:
    file = where / "exp.toml"
    file.write_text(text)
    results = tmp_path / "results.db"
    done = iolab(command, str(file), cwd=where, results=results)
    assert_refused(done, names, results)
    assert sorted(p.name for p in where.iterdir()) == ["data", "exp.toml", "full", "wal"]
    assert list((where / "data").iterdir()) == []


def test_a_missing_file_names_it(tmp_path: Path) -> None:
    results = tmp_path / "results.db"
    for command in ("plan", "run"):
        done = iolab(command, str(tmp_path / "nope.toml"), cwd=tmp_path, results=results)
        assert_refused(done, "nope.toml", results)


def test_the_table_has_enough_rows() -> None:
    assert len(CASES) >= 60
    assert len({c[0] for c in CASES}) == len(CASES)
    assert recorded(Path("/nonexistent/results.db")) == []
