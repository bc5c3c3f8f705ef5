"""iolab: how storage changes your database."""

__version__: str  # read from the installed package's metadata on first use (see __getattr__)


def __getattr__(name: str) -> str:
    """``__version__`` on first use: importlib.metadata costs a command's start ~15 ms (it loads
    the email and zipfile packages), and only ``--version``, a run's environment and the fleet
    ask for it."""
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("iolab")
    except PackageNotFoundError:  # running from a source tree without installation
        found = "0.0.0+unknown"
    globals()["__version__"] = found
    return found
