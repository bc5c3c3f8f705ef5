"""What the command line's parser refuses, said as iolab says every refusal.

typer's parser refuses an unknown option or command, an option without its value, a value of
the wrong type and an extra argument before any of iolab's checks run; here each becomes a
:class:`~iolab.errors.BadInput`: one line naming the option (or the command), the value and
what is allowed, with the closest name when one was misspelled, exit 2, and no usage box
(``error: --rows: '10k' is not allowed; give a whole number, e.g. 10000 for 10k; a count
takes no unit``). Imported on such an error only, by :mod:`iolab.cli.main`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any, get_args, get_origin

from typer import _click as click
from typer._click import exceptions as refused
from typer.core import TyperArgument, TyperGroup, TyperOption

from iolab.config.fields import plainly
from iolab.errors import BadInput, did_you_mean
from iolab.vocabulary import same_idea

EXTRA = re.compile(r"^Got unexpected extra argument\S* \((?P<given>.*)\)$", re.S)
# a count written with a decimal multiple (10k, 1.5M): a count takes no unit (k is 1024 in a
# size, m is minutes in a duration), the line says the number it would have been
COUNT = re.compile(r"^\s*(?P<number>\d+(?:\.\d+)?)\s*(?P<unit>[kKMG])\s*$")
MULTIPLES = {"k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9}


def one_line(exc: click.ClickException, root: click.Command, argv: Sequence[str]) -> BadInput:
    """``exc``, raised parsing ``iolab ARGV`` (``root`` the ``iolab`` group), as one line."""
    ctx = getattr(exc, "ctx", None)
    command, words, rest = _leaf(root, list(argv))
    if ctx is not None:  # the command that refused, where the parser says which
        command, words = ctx.command, _words(ctx)
    name = " ".join(words)
    if isinstance(exc, refused.NoSuchOption):
        close = same_idea(exc.option_name, _options(command)) or did_you_mean(
            exc.option_name, _options(command)
        )
        return BadInput(name, exc.option_name, f"no such option; {close or f'see `{name} --help`'}")
    if isinstance(exc, refused.MissingParameter) and exc.param is not None:
        return _missing(exc.param, command, name)
    if isinstance(exc, refused.BadParameter) and exc.param is not None:
        return _bad_value(exc, exc.param, argv)
    if isinstance(exc, refused.BadOptionUsage):
        option = _option(command, exc.option_name)
        if option is None:
            return BadInput(exc.option_name, None, exc.message)
        flag = _flag(option)
        if option.is_flag:  # --json=1
            value = _values(argv, option).get(exc.option_name)
            return BadInput(flag, value, f"{flag} takes no value: give it alone")
        example = _example(option)  # --sf at the end of the line
        return BadInput(
            flag,
            None,
            f"give {_wanted(option)} after it" + (f", e.g. {flag} {example}" if example else ""),
        )
    if isinstance(command, TyperGroup):
        commands = list(command.commands)
        if rest:  # the word after the group is none of its commands
            close = did_you_mean(rest[0], commands)
            allowed = close or "choose one of: " + ", ".join(commands)
            return BadInput(name, rest[0], f"no such command; {allowed}")
        return BadInput(f"{name} COMMAND", None, "choose one of: " + ", ".join(commands))
    extra = EXTRA.match(exc.message)
    if extra is not None:
        arguments = [_flag(p) for p in command.params if isinstance(p, TyperArgument)]
        takes = f"it takes {' '.join(arguments)}" if arguments else "it takes options only"
        many = "s" if " " in extra["given"] else ""
        return BadInput(
            name, extra["given"], f"extra argument{many}; {takes} (see `{name} --help`)"
        )
    return BadInput(name, " ".join(argv), exc.format_message())


def _leaf(root: click.Command, argv: list[str]) -> tuple[click.Command, list[str], list[str]]:
    """The command ``argv`` names (its groups' words followed), its words (``iolab results
    show``) and the words after it."""
    command, words = root, ["iolab"]
    rest = [a for a in argv if not a.startswith("-")]
    while isinstance(command, TyperGroup) and rest and rest[0] in command.commands:
        words.append(rest[0])
        command = command.commands[rest.pop(0)]
    return command, words, rest


def _words(ctx: click.Context) -> list[str]:
    """``iolab results show`` for the context of ``show`` (whatever the program was called)."""
    words = []
    while ctx.parent is not None:
        words.append(ctx.info_name or "")
        ctx = ctx.parent
    return ["iolab", *reversed(words)]


def _options(command: click.Command) -> list[str]:
    return [
        name
        for p in command.params
        if isinstance(p, TyperOption) and not p.hidden
        for name in (*p.opts, *p.secondary_opts)
    ] + ["--help"]


def _option(command: click.Command, name: str) -> TyperOption | None:
    return next(
        (
            p
            for p in command.params
            if isinstance(p, TyperOption) and name in (*p.opts, *p.secondary_opts)
        ),
        None,
    )


def _flag(param: click.Parameter) -> str:
    """How the refusal names a parameter: its long option (``--output`` of ``-o``), or an
    argument's name as the help writes it (``PATH``, ``RUN``)."""
    if isinstance(param, TyperOption):
        return max(param.opts, key=lambda o: (o.startswith("--"), len(o)))
    return param.metavar or (param.name or "").upper()


def _values(argv: Sequence[str], option: TyperOption) -> dict[str, str]:
    """What ``argv`` gave ``option``, by the name it was given under (``--json=1``: 1)."""
    given: dict[str, str] = {}
    names = (*option.opts, *option.secondary_opts)
    for i, arg in enumerate(argv):
        name, equals, value = arg.partition("=")
        if name in names and equals:
            given[_flag(option)] = given[name] = value
        elif arg in names and i + 1 < len(argv):
            given[_flag(option)] = given[arg] = argv[i + 1]
    return given


def _missing(param: click.Parameter, command: click.Command, name: str) -> BadInput:
    if isinstance(param, TyperArgument):
        arguments = [_flag(p) for p in command.params if isinstance(p, TyperArgument)]
        return BadInput(
            _flag(param), None, f"give it after the command: {name} {' '.join(arguments)}"
        )
    return BadInput(_flag(param), None, f"{name} needs it; see `{name} --help`")


def _bad_value(exc: refused.BadParameter, param: click.Parameter, argv: Sequence[str]) -> BadInput:
    """A value typer could not convert (``--rows 10k``), with the value as given."""
    from pydantic import ValidationError  # typer converted the value with it: loaded already

    cause = exc.__cause__
    error = cause.errors()[0] if isinstance(cause, ValidationError) else None
    flag = _flag(param)
    if error is not None:
        value = error.get("input")
    elif isinstance(param, TyperOption):
        value = _values(argv, param).get(flag)
    else:
        value = None
    allowed = plainly(error) if error is not None else None
    if allowed is None:
        return BadInput(flag, value, exc.message)
    if error is not None and error["type"] in ("int_parsing", "int_from_float"):
        count = COUNT.match(str(value))
        if count is not None:
            number = Decimal(count["number"]) * MULTIPLES[count["unit"]]
            if number == number.to_integral_value():  # 1.1k: 1100, exactly
                allowed += f", e.g. {int(number)} for {value}; a count takes no unit"
        elif _example(param) is not None:
            allowed += f", e.g. {_example(param)}"
    return BadInput(flag, value, allowed)


def _wanted(option: TyperOption) -> str:
    """What an option takes, in words: a whole number, a number, a path or a value."""
    annotation: Any = option.type_descriptor.annotation
    if get_origin(annotation) is list:
        annotation = get_args(annotation)[0]
    if isinstance(annotation, type) and issubclass(annotation, Path):
        return "a path"
    return {int: "a whole number", float: "a number"}.get(annotation, "a value")


def _example(param: click.Parameter) -> str | None:
    """The parameter's default as an example of a value, where it has one."""
    default = param.default
    if default is None or isinstance(default, bool | list | tuple):
        return None
    return str(default)
