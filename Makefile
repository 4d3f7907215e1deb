# The few commands that matter. `make help` lists them.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# upstream openstack-placement 16.0.0 in its own virtualenv: the oracle of tests/upstream
UPSTREAM_VENV := .venv-upstream
UPSTREAM_STAMP := $(UPSTREAM_VENV)/.installed
# a real Keystone (keystone 30.0.0) in its own virtualenv: tests/keystone serve it
KEYSTONE_VENV := .venv-keystone
KEYSTONE_STAMP := $(KEYSTONE_VENV)/.installed

.PHONY: help lock run test lint format typing sample-config openapi clean

help:  ## list the commands
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-14s %s\n", $$1, $$2}'

# requirements.lock: the exact versions every install uses (pyproject.toml keeps ranges for
# those who install the package elsewhere); `make lock` refreshes it.
LOCK := requirements.lock
LOCK_VENV := .venv-lock

$(STAMP): pyproject.toml $(LOCK)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -c $(LOCK) -e '.[test,dev]'
	touch $(STAMP)

lock:  ## refresh requirements.lock: the newest versions pyproject.toml allows (then run make test)
	rm -rf $(LOCK_VENV)
	$(PYTHON) -m venv $(LOCK_VENV)
	$(LOCK_VENV)/bin/pip install --quiet --upgrade pip
	$(LOCK_VENV)/bin/pip install --quiet -e '.[test,dev]'
	echo "# Exact versions for make run, make test and CI; refreshed by make lock." > $(LOCK)
	$(LOCK_VENV)/bin/pip freeze --exclude-editable >> $(LOCK)
	rm -rf $(LOCK_VENV)

$(UPSTREAM_STAMP): tests/upstream/constraints.txt
	$(PYTHON) -m venv $(UPSTREAM_VENV)
	$(UPSTREAM_VENV)/bin/pip install --quiet --upgrade pip
	$(UPSTREAM_VENV)/bin/pip install --quiet -c tests/upstream/constraints.txt openstack-placement psycopg2-binary PyMySQL
	touch $(UPSTREAM_STAMP)

$(KEYSTONE_STAMP): tests/keystone/constraints.txt
	$(PYTHON) -m venv $(KEYSTONE_VENV)
	$(KEYSTONE_VENV)/bin/pip install --quiet --upgrade pip
	$(KEYSTONE_VENV)/bin/pip install --quiet -c tests/keystone/constraints.txt keystone
	touch $(KEYSTONE_STAMP)

run: $(STAMP)  ## run the service on SQLite at http://127.0.0.1:8780
	$(BIN)/placement serve

test: $(STAMP) $(UPSTREAM_STAMP) $(KEYSTONE_STAMP)  ## lint, format and type checks, then the whole test suite on SQLite, PostgreSQL and MariaDB, against upstream and a real Keystone
	$(BIN)/ruff check placement tests benchmarks migrations
	$(BIN)/ruff format --check placement tests benchmarks migrations
	$(BIN)/mypy placement
	$(BIN)/python -m tests.mysqlserver
	$(BIN)/pytest -n auto

lint: $(STAMP)  ## ruff: the checks and the format
	$(BIN)/ruff check placement tests benchmarks migrations
	$(BIN)/ruff format --check placement tests benchmarks migrations

format: $(STAMP)  ## ruff format, in place
	$(BIN)/ruff format placement tests benchmarks migrations

typing: $(STAMP)  ## mypy on placement/
	$(BIN)/mypy placement

sample-config: $(STAMP)  ## regenerate etc/placement.conf.sample and etc/policy.yaml.sample
	$(BIN)/placement sample-config > etc/placement.conf.sample
	$(BIN)/placement policy-sample > etc/policy.yaml.sample

openapi: $(STAMP)  ## regenerate api-ref/openapi.json (a test fails while it is out of date)
	$(BIN)/placement openapi > api-ref/openapi.json

clean:  ## remove the virtualenv, caches and the SQLite database of `make run` (stop it first)
	rm -rf $(VENV) $(UPSTREAM_VENV) $(KEYSTONE_VENV) .pytest_cache .ruff_cache .mypy_cache
	rm -f placement.sqlite placement.sqlite-*
