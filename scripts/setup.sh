#!/usr/bin/env bash
# Sets up what iolab needs on Debian/Ubuntu: system packages (when root) and a virtual environment.
#   scripts/setup.sh          for running iolab (fio)
#   scripts/setup.sh --tests  also what the test suite needs (MariaDB server, mkfs for the testbed,
#                             nbdkit and nbdfuse for its device models, sysbench for
#                             `iolab sysbench`)
# Safe to run again: it only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

want=(fio util-linux)
# the compiled driver core's build (docs/architecture.md): optional, so only a root run installs
# them; without them pip still installs iolab and its Python drivers run instead
build=(gcc python3-dev libpq-dev libmariadb-dev)
# the testbed's device models (docs/testbed.md): `iolab demo` puts PostgreSQL's WAL on an emulated
# 7,200 rpm disk where they run (root, FUSE), else in memory; also only installed by a root run
testbed=(nbdkit nbdkit-plugin-python libnbd-bin fuse3)
[[ $(id -u) -eq 0 ]] && want+=("${build[@]}" "${testbed[@]}")
if [[ "${1:-}" == "--tests" ]]; then
    want+=(mariadb-server e2fsprogs xfsprogs chromium)
    want+=("${testbed[@]}")  # testbed device models (a non-root run lists them as missing)
    want+=(strace)  # a test delays a process's exit with it
    want+=(sysbench)  # `iolab sysbench`: the field's own driver (pgbench comes with PostgreSQL)
    want+=(nftables iproute2)  # the fleet's security tests: the documented firewall rules, ss
fi

missing=()
for pkg in "${want[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
    if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
        echo "setup: installing Debian packages: ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    else
        echo "setup: missing packages: ${missing[*]}" >&2
        echo "setup: install them first, e.g.: sudo apt-get install ${missing[*]}" >&2
        exit 1
    fi
fi

py=${PYTHON:-python3}
if ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "setup: iolab needs Python 3.11 or newer; found: $("$py" --version 2>&1)" >&2
    exit 1
fi
if [[ ! -x .venv/bin/python ]]; then
    echo "setup: creating .venv"
    "$py" -m venv .venv
fi
# Reinstall only when the dependencies or the compiled core's sources changed.
stamp=.venv/.iolab-installed
digest=$(cat pyproject.toml setup.py src/iolab/drivercore/c/* | sha256sum | cut -d' ' -f1)
if [[ ! -f $stamp || $(cat "$stamp") != "$digest" ]]; then
    echo "setup: installing Python dependencies into .venv"
    .venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
    .venv/bin/python -m pip install -q --disable-pip-version-check -e '.[engines,dev,serve]'
    echo "$digest" > "$stamp"
    # pip hides an optional build that failed: say which driver core iolab will run
    .venv/bin/python -m iolab.drivercore
fi
# The fleet tests start a Ray cluster: the tests get the fleet extra (Ray), iolab itself does not.
if [[ "${1:-}" == "--tests" ]] &&
    ! .venv/bin/python -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("ray") is None)'; then
    echo "setup: installing the fleet extra (Ray) for the fleet tests"
    .venv/bin/python -m pip install -q --disable-pip-version-check -e '.[engines,dev,fleet]'
fi
