"""iolab: how storage changes your database."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("iolab")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.0.0+unknown"
