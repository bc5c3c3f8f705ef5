"""One vocabulary (issue 47, item 7): every command's --help in words, not Python types; µs,
never "us"; one help text for a flag two commands share as the same idea; an old name still
works and says so; sizes in MiB; the same percentiles in every latency table.

Every command is found by walking iolab's click group (typer's introspection), so a command or
a flag added later is held to the same rules without a change here."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from rich.console import Console
from typer import _click as click
from typer.core import TyperGroup, TyperOption

from iolab import vocabulary
from iolab.cli import main
from iolab.config.experiment import parse
from iolab.report import populate as populate_report
from iolab.report import tpcc as tpcc_report
from iolab.units import format_bytes, format_micros
from iolab.workloads.interface import model_of
from iolab.workloads.tpcc.options import TpccWorkload
from tests.unit.cli import iolab


def _leaves(command: click.Command, words: list[str]) -> Iterator[tuple[str, click.Command]]:
    if isinstance(command, TyperGroup):
        for name in command.commands:
            yield from _leaves(command.commands[name], [*words, name])
    else:
        yield " ".join(words), command


COMMANDS = list(_leaves(typer.main.get_command(main.app), []))
NAMES = [name for name, _ in COMMANDS]
# what typer writes of a Python type, and a microsecond written "us"
TYPES = ("list[", "<int range>", "Path]", "x>=", "x<=", "<int>", "<str>", "<bool>", "<path>")
US = re.compile(r"(\d|\b[a-z]+ )\s?us\b|\bus\)")


def _text(words: str, *args: str) -> str:
    done = iolab(*words.split(), *args)
    assert done.code == 0, done
    return done.stdout


def test_every_command_is_walked() -> None:
    assert {"populate", "tpcc", "tpch", "disk", "results list", "testbed up", "fleet start"} <= set(
        NAMES
    )


@pytest.mark.parametrize("name", NAMES)
def test_help_says_words_not_types(name: str) -> None:
    text = _text(name, "--help")
    found = [t for t in TYPES if t in text]
    assert not found, f"iolab {name} --help shows {found}"
    assert US.search(text) is None, f"iolab {name} --help writes us for µs"


def test_a_value_is_named_by_what_it_is() -> None:
    text = _text("populate", "--help")
    rows = {line.split()[1]: line.split()[2] for line in text.splitlines() if "│ --" in line}
    assert (rows["--data-dir"], rows["--rows"], rows["--duration"]) == ("DIR", "N", "DURATION")
    assert (rows["--bytes"], rows["--warmup"], rows["--set"]) == (
        "SIZE",
        "ROWS|DURATION",
        "NAME=VALUE",
    )
    assert rows["--json"] == "Print"  # a flag: no value, its help follows


def test_a_flag_shared_as_the_same_idea_has_one_help_text() -> None:
    helps: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for name, command in COMMANDS:
        for param in command.params:
            if isinstance(param, TyperOption):
                for flag in (o for o in param.opts if o.startswith("--")):
                    helps[flag][param.help or ""].append(name)
    shared = {flag: texts for flag, texts in helps.items() if sum(map(len, texts.values())) > 1}
    differ = {
        flag: dict(texts)
        for flag, texts in shared.items()
        if len(texts) > 1 and flag not in vocabulary.PER_COMMAND
    }
    assert differ == {}, "the same flag with two help texts: one text, or PER_COMMAND's why"
    # the exceptions are flags two commands have, and say why
    assert set(vocabulary.PER_COMMAND) <= set(shared)
    assert len(helps["--results"]) == 2  # read, or written
    for flag in ("--data-dir", "--files", "--wal-dir", "--temp-dir", "--set", "--pg-bin"):
        assert len(helps[flag]) == 1, flag  # declared once, in cli/options.py
        assert {c for cs in helps[flag].values() for c in cs} >= {"populate", "tpcc", "tpch"}


def test_no_command_imports_anothers_private_names() -> None:
    """Commands share options through cli/options.py, not one another's _private names."""
    cli = Path(main.__file__).parent
    private = re.compile(r"^\s*from iolab\.cli\.\w+ import .*\b_\w+", re.M)
    found = {p.name: private.findall(p.read_text()) for p in cli.glob("*.py")}
    assert {name: f for name, f in found.items() if f} == {}
    assert "InnoDB" not in _text("pgbench", "--help")


def test_the_one_map_names_each_idea_once() -> None:
    names = [n for idea in vocabulary.IDEAS for n in (idea.name, *idea.old, *idea.elsewhere)]
    assert len(names) == len(set(names))
    assert vocabulary.current("rampup") == "warmup"
    assert vocabulary.current("--rampup") == "--warmup"
    assert vocabulary.current("connections") == "connections"


def test_an_old_flag_still_works_and_says_so() -> None:
    done = iolab("tpcc", "--rampup", "200h")  # refused after the rewrite: nothing starts
    assert done.code == 2
    assert done.error_lines == [
        "note: --rampup is now --warmup (the old name still works; docs/vocabulary.md)",
        "error: --warmup: '200h' is not allowed; give at most 7 days (604,800 s), e.g. 8h",
    ]


def test_another_tools_word_points_at_iolabs() -> None:
    done = iolab("tpcc", "--ramp-up", "5s")
    assert done.error_lines == [
        "error: iolab tpcc: '--ramp-up' is not allowed; no such option; did you mean --warmup?"
    ]


def test_an_old_experiment_key_still_works_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    vocabulary._noted.clear()
    raw = {
        "experiment": {"name": "old words", "baseline": {"rampup": "1s"}},
        "workload": {"kind": "tpcc", "engine": "sqlite", "rampup": "3s", "duration": "5s"},
        "layouts": {"here": {"data_dirs": ["."]}},
        "matrix": {"rampup": ["1s", "2s"]},
    }
    experiment = parse(raw, tmp_path / "old.toml")
    assert [c.params["warmup"] for c in experiment.cells] == [1.0, 2.0]
    assert [c.label for c in experiment.cells] == ["warmup=1s", "warmup=2s"]
    assert experiment.baseline is not None and experiment.baseline.params["warmup"] == 1.0
    assert capsys.readouterr().err.splitlines() == [
        "note: workload.rampup is now workload.warmup (the old name still works; "
        "docs/vocabulary.md)",
        "note: matrix.rampup is now matrix.warmup (the old name still works; docs/vocabulary.md)",
        "note: experiment.baseline.rampup is now experiment.baseline.warmup (the old name still "
        "works; docs/vocabulary.md)",
    ]


def test_a_tpcc_cell_keeps_the_id_it_was_stored_under_before_the_rename(tmp_path: Path) -> None:
    from iolab.results import content_hash

    def cells(key: str, kind: str = "tpcc") -> list[Any]:
        raw = {
            "experiment": {"name": "ids"},
            "workload": {"kind": kind, "engine": "sqlite", key: "3s", "duration": "5s"},
            "layouts": {"here": {"data_dirs": ["."]}},
        }
        return list(parse(raw, tmp_path / "ids.toml").cells)

    (old,), (new,) = cells("rampup"), cells("warmup")
    assert old.id == new.id
    stored = {("rampup" if k == "warmup" else k): v for k, v in new.params.items()}
    assert new.id == content_hash(stored, 12)  # the id its cell had when it was stored
    (populate,) = cells("warmup", "populate")  # populate's key was always warmup
    assert populate.id == content_hash(populate.params, 12)


def test_a_cell_stored_under_the_old_key_reads_as_the_new() -> None:
    stored = {"kind": "tpcc", "engine": "postgres", "rampup": 7.0, "duration": 20.0}
    assert model_of(TpccWorkload, stored).warmup == 7.0
    assert TpccWorkload.model_validate(stored).warmup == 7.0


def _rendered(table: object) -> str:
    console = Console(width=200, record=True, color_system=None)
    console.print(table)
    return console.export_text()


def test_sizes_print_in_mib() -> None:
    assert format_bytes(125_300_000) == "119.5 MiB"
    s = {
        **{"engine": "postgres", "warehouses": 1, "connections": 2, "mode": "server"},
        **{"nopm": 1, "nopm_client": 1, "nopm_orders": 1, "tpm": 2, "tpm_client": 2},
        **{"measured_seconds": 60.0, "warmup_seconds": 10.0, "data_bytes": 78_000_000},
        **{"load_seconds": 2.0, "load_mb_per_second": 39.0, "index_seconds": 1.0},
        "on_disk_bytes": 125_300_000,
        "tpm_source": "database",
    }
    text = _rendered(tpcc_report.summary_table(s))
    assert "on disk" in text and "119.5 MiB" in text
    assert "74.4 MiB in 2.0 s (39.0 MB/s)" in text  # a size in MiB, a rate in MB/s
    assert re.search(r"\d MB\b(?!/s)", text) is None
    assert "after a 10 s warm-up" in text


def test_a_run_stored_with_rampup_seconds_reads_its_warm_up() -> None:
    s = {
        **{"nopm": 1, "nopm_client": 1, "nopm_orders": 1, "tpm": 2, "tpm_client": 2},
        **{"measured_seconds": 60.0, "rampup_seconds": 5.0, "data_bytes": 1 << 20},
        **{"load_seconds": 1.0, "load_mb_per_second": 1.0, "index_seconds": 1.0},
    }
    assert "after a 5 s warm-up" in _rendered(tpcc_report.summary_table(s))


def test_microseconds_are_written_with_the_micro_sign() -> None:
    assert format_micros(581) == "581 µs"
    assert format_micros(17_300) == "17.3 ms"


def test_every_latency_table_shows_the_same_percentiles() -> None:
    shown = [name for name, _ in populate_report.LATENCY_COLUMNS]
    assert shown == ["mean", "p50", "p95", "p99", "p99.9", "max"]
    kind = {"count": 3, "rollbacks": 0, "retries": 0}
    latency = {"p50_us": 1000, "p95_us": 2000, "p99_us": 3000, "p999_us": 4000, "max_us": 5000}
    s = {"transactions": {t: kind | latency for t in tpcc_report.TYPES}}
    head = _rendered(tpcc_report.transactions_table(s)).splitlines()[2]
    assert [w for w in head.split() if w.isascii()][-5:] == ["p50", "p95", "p99", "p99.9", "max"]
    # a populate run stored before p95 was recorded: "-" there, the rest as stored
    old = {"latency": {"commit": {"count": 2, "mean_us": 5.0, "p50_us": 4, "p99_us": 9,
                                  "p999_us": 9, "max_us": 9}}}  # fmt: skip
    row = next(line for line in _rendered(populate_report.latency_table(old)).splitlines()
               if "commit " in line)  # fmt: skip
    assert [w for w in row.split() if w.isalnum() or w == "-"] == [
        *("commit", "2", "5", "µs", "4", "µs", "-"),
        *("9", "µs", "9", "µs", "9", "µs"),
    ]
