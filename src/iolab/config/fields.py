"""Where a value came from, in the user's words: a command-line option or an experiment key.

The core's checks name the command-line option (``--rows``, ``--set shared_buffers``,
``--wal-dir``); a value from an experiment file is reported under the key the file wrote it
with (``workload.rows``, ``matrix.settings.shared_buffers``, ``layouts.ssd.wal_dir``). This
table is the one place the two vocabularies meet.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from iolab.errors import BadInput

# option (without "--") -> parameter key, where the two differ by more than '-' and '_'
OPTION_KEYS = {
    "data-dir": "data_dirs",
    "set": "settings",
    "sf": "scale_factor",
    "PATH": "data_dirs",  # iolab disk's target: the layout's first data dir
}
LAYOUT_KEYS = ("data_dirs", "files", "wal_dir", "temp_dir", "settings")


FLAGS = {key: f"--{option}" for option, key in OPTION_KEYS.items() if option != "PATH"}


def flag_of(key: str) -> str:
    """The command-line option of a parameter (``scale_factor`` -> ``--sf``)."""
    return FLAGS.get(key, "--" + key.replace("_", "-"))


def param_of(field: str, value: object) -> str | None:
    """The parameter an option names (``--set work_mem`` -> ``settings.work_mem``), or None."""
    head, _, rest = field.partition(" ")
    if not head.startswith("--") and head != "PATH":
        return None
    option = head.removeprefix("--").split("/", 1)[0]
    key = OPTION_KEYS.get(option, option.replace("-", "_"))
    if key == "settings":
        name = rest.strip() if rest.strip() and not rest.startswith("(") else value
        return f"settings.{name}" if isinstance(name, str) and name else "settings"
    return key


def file_key(param: str, matrix: Mapping[str, Any], layout: str) -> str:
    """The experiment-file key a parameter of a cell was written as."""
    if param in matrix:
        return f"matrix.{param}"
    if param.split(".", 1)[0] in LAYOUT_KEYS:
        return f"layouts.{layout}.{param}"
    return f"workload.{param}"


# A check of pydantic's (a model's or typer's, which converts options with pydantic) in the
# words of iolab's own: its type -> what to give; bounds take the limit from the error.
PLAIN = {
    "float_parsing": "give a number, e.g. 1 or 0.01",
    "finite_number": "give a finite number",
    "int_parsing": "give a whole number",
    "int_from_float": "give a whole number",
    "bool_parsing": "give true or false",
    "greater_than": "give more than {:g}",
    "greater_than_equal": "give {:g} or more",
    "less_than_equal": "give {:g} or less",
}
_BOUNDS = {"greater_than": "gt", "greater_than_equal": "ge", "less_than_equal": "le"}


def plainly(error: Mapping[str, Any]) -> str | None:
    """What a pydantic error (one of ``ValidationError.errors()``) asks for, in iolab's words
    (``give 1 or more``), or None for one without words of iolab's."""
    said = PLAIN.get(error["type"])
    bound = _BOUNDS.get(error["type"])
    if said is not None and bound is not None:
        return said.format(error.get("ctx", {}).get(bound, 0))
    return said


def in_file(exc: BadInput, matrix: Mapping[str, Any], layout: str) -> BadInput:
    """``exc`` of a cell's check, renamed from the option to the file's key."""
    param = param_of(exc.field, exc.value)
    if param is None:
        return exc
    return BadInput(file_key(param, matrix, layout), exc.value, exc.allowed)
