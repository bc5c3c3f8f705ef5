# The two commands of the README's quick start, and the checks CI runs.
.PHONY: demo test setup setup-tests lint unit

# The main job: a disk profile of the current directory and a small populate experiment,
# ending with the findings in the terminal and report.html.
demo: setup
	.venv/bin/iolab demo

# Everything CI checks: lint, types, and the whole test suite on real fio and database servers
# (the 30 slowest tests listed before the closing line: where CI's time goes).
test: setup-tests lint
	.venv/bin/python -m pytest -q --durations=30

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
