"""The errors iolab reports to people, and the exit codes they map to.

The core raises these; the CLI prints ``error: <message>`` on one line and exits with ``exit_code``.
Anything else escaping the core is a bug and is shown as such.
"""

from __future__ import annotations

from collections.abc import Iterable


class IolabError(Exception):
    """An error meant for the user, with a message that says what to do."""

    exit_code = 1


class BadInput(IolabError):
    """Input that cannot be used: names the field, the value given and what is allowed."""

    exit_code = 2

    def __init__(self, field: str, value: object, allowed: str) -> None:
        self.field = field
        self.value = value
        self.allowed = allowed
        given = "missing" if value is None else f"{value!r} is not allowed"  # None: not given
        super().__init__(f"{field}: {given}; {allowed}")

    @classmethod
    def choice(
        cls, field: str, value: object, choices: Iterable[str], *, suggest: bool = False
    ) -> BadInput:
        """``choose one of: a, b``; with ``suggest``, the closest choice first (a name
        misspelled: ``did you mean connections? choose one of: ...``)."""
        choices = list(choices)
        close = did_you_mean(str(value), choices) if suggest else ""
        return cls(
            field, value, (f"{close} " if close else "") + "choose one of: " + ", ".join(choices)
        )


def did_you_mean(given: str, known: Iterable[str]) -> str:
    """``did you mean --rows?`` for the name of ``known`` closest to ``given`` (an option,
    a command, a key), or "" when none is close. Names are compared without their leading
    dashes and case, so that ``--threads`` is not close to ``--bytes`` for their ``--``."""
    import difflib  # on an error only: not loaded to start a command

    def bare(name: str) -> str:
        return name.lstrip("-").lower()

    by_bare: dict[str, str] = {}
    for name in known:
        by_bare.setdefault(bare(name), name)
    close = difflib.get_close_matches(bare(given), list(by_bare), n=1)
    return f"did you mean {by_bare[close[0]]}?" if close else ""


class MissingTool(IolabError):
    """A program or package iolab needs is not installed; says how to get it."""

    exit_code = 2

    def __init__(self, tool: str, how: str) -> None:
        self.tool = tool
        super().__init__(f"{tool} is not installed; {how}")


class RunFailed(IolabError):
    """A workload run could not finish (a tool failed, a server died, the disk filled)."""

    exit_code = 1


class Unavailable(IolabError):
    """The machine refuses what is needed (no root, no loop devices, no cgroup controller);
    says what is missing. Tests skip with this message."""

    exit_code = 2

    def __init__(self, what: str, reason: str) -> None:
        self.what = what
        self.reason = reason
        super().__init__(f"{what} is not available here: {reason}")
