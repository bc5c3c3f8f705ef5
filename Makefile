# The two commands of the README's quick start, and the checks CI runs.
.PHONY: demo test setup setup-tests lint unit

# The main job: a disk profile of the current directory, ending with a results table.
demo: setup
	.venv/bin/iolab disk . --size 256MiB --runs 3 --duration 3 --interval 1

# Everything CI checks: lint, types, and the whole test suite on real fio and database servers.
test: setup-tests lint
	.venv/bin/python -m pytest -q

setup:
	@scripts/setup.sh

setup-tests:
	@scripts/setup.sh --tests

lint:
	.venv/bin/ruff check src tests bench
	.venv/bin/ruff format --check src tests bench
	.venv/bin/mypy

unit: setup
	.venv/bin/python -m pytest -q tests/unit
