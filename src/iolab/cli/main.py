"""The ``iolab`` command: wires options to the core and renders what comes back."""

from __future__ import annotations

import importlib
import signal
import sys
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any, get_args, get_origin

import typer
from typer import _click as click
from typer import main as typer_main
from typer.core import TyperArgument, TyperGroup, TyperOption
from typer.models import CommandInfo, TyperInfo

from iolab.cli.streams import fit_streams, guarded, open_missing
from iolab.errors import IolabError
from iolab.redaction import redact
from iolab.system.open_files import raise_to_hard
from iolab.vocabulary import has_old_flag, rewrite_argv

# Each command as MODULE:ATTRIBUTE, imported and made into a click command only when it runs
# or --help lists it: starting one command imports its own module alone, and typer reads one
# signature, not all 21. In typer's order: the commands, then the groups.
COMMANDS = {
    "demo": "iolab.cli.demo:demo",
    "disk": "iolab.cli.disk:disk",
    "populate": "iolab.cli.populate:populate",
    "plan": "iolab.cli.experiment:plan",
    "run": "iolab.cli.experiment:run",
    "report": "iolab.cli.report:report",
    "compare": "iolab.cli.report:compare",
    "export": "iolab.cli.report:export",
    "tpch": "iolab.cli.tpch:tpch",
    "tpcc": "iolab.cli.tpcc:tpcc",
    "pgbench": "iolab.cli.pgbench:pgbench",
    "sysbench": "iolab.cli.sysbench:sysbench",
    "timeline": "iolab.cli.timeline:timeline",
    "why": "iolab.cli.why:why",
    "serve": "iolab.cli.serve:serve",
    "results": "iolab.cli.results:app",
    "testbed": "iolab.cli.testbed:app",
    "fleet": "iolab.cli.fleet:app",
}


class LazyCommands(MutableMapping[str, click.Command]):
    """The group's commands by name: every name of :data:`COMMANDS` is there from the start (for
    listing and typo suggestions), and its command is imported and built on first look, exactly
    as typer builds it eagerly (same function, same settings)."""

    def __init__(self, settings: typer.Typer) -> None:
        self._settings = settings
        self._made: dict[str, click.Command] = {}

    def __getitem__(self, name: str) -> click.Command:
        if name not in self._made:
            self._made[name] = self._make(name, COMMANDS[name])
        return self._made[name]

    def _make(self, name: str, target: str) -> click.Command:
        module, _, attribute = target.partition(":")
        made = getattr(importlib.import_module(module), attribute)
        s = self._settings
        if isinstance(made, typer.Typer):
            return in_words(
                typer_main.get_group_from_info(
                    TyperInfo(made, name=name),
                    pretty_exceptions_short=s.pretty_exceptions_short,
                    suggest_commands=s.suggest_commands,
                    rich_markup_mode=s.rich_markup_mode,
                )
            )
        return in_words(
            typer_main.get_command_from_info(
                CommandInfo(name=name, callback=made),
                pretty_exceptions_short=s.pretty_exceptions_short,
                rich_markup_mode=s.rich_markup_mode,
            )
        )

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._made[name] = command

    def __delitem__(self, name: str) -> None:
        del self._made[name]

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*COMMANDS, *self._made]))

    def __len__(self) -> int:
        return len(dict.fromkeys([*COMMANDS, *self._made]))

    def __contains__(self, name: object) -> bool:
        return name in COMMANDS or name in self._made


# What an option's value is, in the help's words (typer would write the Python type:
# <list[Path]>, <int>, <str>): by the option's name, else by its type.
WORDS_BY_NAME = {
    **dict.fromkeys(("duration", "warmup", "interval", "interval_s", "timeout"), "DURATION"),
    "checkpoint_every": "DURATION",
    **dict.fromkeys(("size", "bytes", "memory", "presize_wal"), "SIZE"),
    **dict.fromkeys(("pg_bin", "png", "data_dir", "wal_dir", "temp_dir", "directory"), "DIR"),
    "engine": "ENGINE",
    "dsn": "DSN",
    "setting": "NAME=VALUE",
}
WORDS_BY_TYPE = {int: "N", float: "NUMBER", str: "TEXT", Path: "FILE"}


def in_words(command: click.Command) -> click.Command:
    """``command`` (and a group's commands) with its help's value column in words: ``DIR``,
    ``N``, ``DURATION``, nothing after a flag; an argument's name says what it takes."""
    for param in command.params:
        if isinstance(param, TyperOption) and param.metavar is None:
            if param.is_flag:
                param.metavar = ""
            else:
                param.metavar = _word(param)
        elif isinstance(param, TyperArgument):
            param.display_type_rich = _no_type  # type: ignore[method-assign]
    made = command.get_help_option

    def help_option(ctx: click.Context) -> Any:
        option = made(ctx)
        if option is not None:
            option.metavar = ""  # a flag: no value to name
        return option

    command.get_help_option = help_option  # type: ignore[method-assign]
    if isinstance(command, TyperGroup):
        for sub in command.commands.values():
            in_words(sub)
    return command


def _no_type(ctx: click.Context) -> None:
    return None


def _word(param: TyperOption) -> str:
    annotation: Any = param.type_descriptor.annotation
    while get_origin(annotation) is list:
        annotation = get_args(annotation)[0]
    if param.name in WORDS_BY_NAME:
        return WORDS_BY_NAME[param.name]
    if isinstance(annotation, type) and issubclass(annotation, Path):
        annotation = Path
    return WORDS_BY_TYPE.get(annotation, "TEXT")


class Commands(TyperGroup):
    """iolab's command group: its commands are a :class:`LazyCommands`, so that starting one
    command reads one signature, not all of them."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = LazyCommands(app)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)  # names only: nothing is built to list them

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """``iolab --help`` in click's plain layout: the same usage, text, options and
        commands as typer's rich panels, without loading rich to draw them (0.11 s to start
        instead of 0.18 s). Each command's own ``--help`` keeps typer's layout."""
        super(TyperGroup, self).format_help(ctx, formatter)  # click's, past typer's panels

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """``iolab`` alone prints the help to stdout and exits 2 (typer's rich help printed it
        as it was drawn; the plain help is a string that must be printed)."""
        if not args and self.no_args_is_help and not ctx.resilient_parsing:
            click.echo(ctx.get_help(), color=ctx.color)
            ctx.exit(2)
        if has_old_flag(args):  # --rampup: iolab's former name of --warmup, with a note
            args = _current_flags(self, args)
        ctx.meta[ARGV] = list(args)  # for a refusal of the parser's below (see :meth:`invoke`)
        with self._one_line(args):
            return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        """Runs the command; what the parser refuses on the way (an unknown option or command,
        a value missing or of the wrong type, an extra argument) is one line, as iolab's own
        refusals are (:mod:`iolab.cli.usage`), not typer's usage box."""
        with self._one_line(ctx.meta.get(ARGV, [])):
            return super().invoke(ctx)

    @contextmanager
    def _one_line(self, argv: list[str]) -> Iterator[None]:
        try:
            yield
        except click.exceptions.NoArgsIsHelpError:
            raise  # `iolab results` alone: its help
        except click.ClickException as exc:
            from iolab.cli.usage import one_line

            raise one_line(exc, self, argv) from None


ARGV = "iolab.argv"  # the arguments after `iolab`, in the contexts' shared meta


def _current_flags(root: click.Command, args: list[str]) -> list[str]:
    """``args`` with each old flag (:mod:`iolab.vocabulary`) of the command they name under its
    new name, where the command has it and not the old one."""
    command = root
    rest = [a for a in args if not a.startswith("-")]
    while isinstance(command, TyperGroup) and rest and rest[0] in command.commands:
        command = command.commands[rest.pop(0)]
    options = [o for p in command.params for o in (*p.opts, *p.secondary_opts)]
    return rewrite_argv(args, options)


app = typer.Typer(
    name="iolab",
    cls=Commands,
    help="How storage changes your database: disk profiles, database workloads on the layouts "
    "under test, and the statistics to tell the difference.",
    epilog="Environment: IOLAB_RESULTS, the results database (as --results); "
    "IOLAB_DRIVER_CORE=auto|native|python, which driver core runs the loads of populate's client "
    "mode and TPC-C's server mode on PostgreSQL and MariaDB: auto, the compiled one where it is "
    "built (`python -m iolab.drivercore` says whether it is), else Python "
    '(docs/architecture.md, "The driver core").',
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode="markdown",
)


def _version(value: bool) -> None:
    if value:
        from iolab import __version__

        print(f"iolab {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """iolab: how storage changes your database."""


def _terminate(signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def run() -> None:
    """Entry point: errors meant for people become one line and an exit code, never a traceback.

    What the parser refuses is one line too (:meth:`Commands.invoke`); typer turns Ctrl-C
    into exit 130. Output whose
    reader has gone (``| head -1``) is dropped and the command finishes its work, exiting as
    it would have (see :mod:`iolab.cli.console`).
    """
    open_missing()  # before anything opens a file: `iolab ... >&-` runs without output
    try:
        _run()
    except SystemExit as exc:
        _end_stuck_driver(exc.code)
        raise
    _end_stuck_driver(0)


def _end_stuck_driver(code: object) -> None:
    """A fleet's driver whose head stopped answering (frozen) cannot end as a process does:
    Ray's core worker waits on the head, then crashes, while the interpreter exits. Once it
    has said what it had to, it ends at once instead, with the exit code it had."""
    cluster = sys.modules.get("iolab.fleet.cluster")
    if cluster is None or not cluster.stuck():
        return
    import os
    from contextlib import suppress

    for stream in (sys.stdout, sys.stderr):
        with suppress(Exception):
            stream.flush()
    os._exit(code if isinstance(code, int) else (0 if code is None else 1))


def _run() -> None:
    signal.signal(signal.SIGTERM, _terminate)
    fit_streams()
    raise_to_hard()  # as many open files as the machine allows: connections, servers
    with guarded():
        try:
            app()
        except IolabError as exc:
            from rich.markup import escape

            from iolab.cli.console import stderr

            stderr.print(
                f"[bold red]error:[/] {escape(redact(str(exc)))}", highlight=False, soft_wrap=True
            )
            sys.exit(exc.exit_code)
        except SystemExit as exc:
            if exc.code == INTERRUPTED:
                from iolab.cli.console import stderr

                stderr.print("[yellow]interrupted[/]: cleaned up; finished results are kept")
            raise


INTERRUPTED = 130
