"""The compiled driver core (docs/architecture.md, "The driver core"): an optional C extension.

``pip install -e .`` builds ``iolab.drivercore._native`` when a C compiler, Python's headers,
libpq's and libmariadb's are there (scripts/setup.sh installs them when root), and still
succeeds without them: the build is ``optional``, and iolab then runs its Python drivers and
says so (``iolab.drivercore.choose``). Everything else is in pyproject.toml.
"""

from __future__ import annotations

import os
import subprocess

from setuptools import Extension, setup

SOURCES = "src/iolab/drivercore/c"


def _flags(tool: list[str], default: list[str]) -> list[str]:
    """A ``pkg-config``/``mariadb_config`` answer, or ``default`` when the tool is missing."""
    try:
        out = subprocess.run(tool, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return default
    return out.split()


def _extension() -> Extension:
    includes = [
        "/usr/include/postgresql",
        *(f[2:] for f in _flags(["mariadb_config", "--include"], ["-I/usr/include/mariadb"])),
    ]
    extra = ["-O2", "-std=gnu11", "-Wall", "-Wextra", "-Wno-unused-parameter", "-pthread"]
    sanitize = os.environ.get("IOLAB_SANITIZE")  # "address,undefined": the CI's sanitizer build
    links = ["-pthread"]
    if sanitize:
        extra += [f"-fsanitize={sanitize}", "-fno-omit-frame-pointer", "-O1", "-g"]
        links += [f"-fsanitize={sanitize}"]
    return Extension(
        "iolab.drivercore._native",
        sources=sorted(
            os.path.join(SOURCES, name) for name in os.listdir(SOURCES) if name.endswith(".c")
        ),
        depends=sorted(
            os.path.join(SOURCES, name) for name in os.listdir(SOURCES) if name.endswith(".h")
        ),
        include_dirs=[SOURCES, *includes],
        libraries=["pq", "mariadb"],
        extra_compile_args=extra,
        extra_link_args=links,
        optional=True,  # no compiler or headers: a warning, and the Python drivers
    )


setup(ext_modules=[_extension()])
