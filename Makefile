# The two commands of the README: `make demo` and `make test` (`make test-all`: every tier, as CI).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: install demo test test-connect test-stores test-all unit lint bench bench-connect bench-cdc clean

# Re-installed whenever the package changes: a regular install, not `-e`, because dbt finds
# adapter plugins only in its own package folder (`dbt --version` lists `deltamerge` then).
PACKAGE_FILES := setup.py $(shell find dbt -type f \( -name '*.py' -o -name '*.sql' -o -name '*.yml' \))

$(VENV)/.installed: $(PACKAGE_FILES)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	rm -rf build
	$(PY) -m pip install --quiet ".[test]"
	touch $@

install: $(VENV)/.installed

## Run the example dbt project on its warehouse's warm local Spark server (started by the first
## run, reused by the next; it stops after 30 idle minutes) and print Delta history.
demo: install
	$(PY) examples/shop/demo.py

## The README's test command: unit tests and the functional tests (real dbt + Spark + Delta,
## Delta Lake on Spark as the oracle) on the embedded session, under 40 minutes on 2 cores.
## The other backends and stores have targets of their own (CI runs all three: `make test-all`).
test: install
	# Two workers, one test file each at a time (each with its own Spark session and warehouse).
	# The warm server's tests (marked `server`: servers of their own) run in `make test-connect`.
	$(PY) -m pytest -n 2 --dist loadfile --durations=15 -m "not server"

## The functional tests marked `connect` on real standalone clusters through Spark Connect (a run
## of its own: pyspark cannot mix both kinds of session in one process; its two workers each start
## a cluster, whose Spark work runs on one executor core), and those marked `server`: the warm local
## Spark Connect server's life cycle and faults. CONNECT_ALL=1: every functional test.
test-connect: install
	DELTAMERGE_TEST_BACKEND=connect DELTAMERGE_CONNECT_ALL=$(CONNECT_ALL) \
		DELTAMERGE_DIFF_CASES=$${DELTAMERGE_DIFF_CASES:-4} DELTAMERGE_DML_CASES=$${DELTAMERGE_DML_CASES:-2} \
		$(PY) -m pytest tests/functional -n 2 --dist loadfile --durations=10

## The object-store tier: the tests marked `s3` and `stores` on a real S3 server (S3Proxy from
## Maven Central, cached in ~/.cache/dbt-deltamerge; the warehouse on S3), the fault proxy and
## Azurite (npm), Spark with Hadoop's S3A connector (Ivy's cache), a cluster sharing no disk
## (needs root): a sample of the differentials.
test-stores: install
	DELTAMERGE_TEST_STORE=s3 \
		DELTAMERGE_DIFF_CASES=$${DELTAMERGE_DIFF_CASES:-2} DELTAMERGE_DML_CASES=$${DELTAMERGE_DML_CASES:-2} \
		$(PY) -m pytest tests/functional -n 2 --dist loadfile --durations=10

## Every tier, as CI runs them: about 75 minutes on 2 cores.
test-all: test test-connect test-stores

## The benchmark harness (not part of the tests): writes BENCHMARKS.md and benchmarks/*. About 80 minutes on 2 cores.
bench: install
	$(PY) -m benchmarks $(BENCH_ARGS)

## Spark Connect vs the embedded session: cold dbt run on the warm server, 10M-row merges, a no-op merge.
bench-connect: install
	$(PY) -m benchmarks.connect $(BENCH_ARGS)

## CDC apply against a plain merge of the same net changes (10M rows, 100k events).
bench-cdc: install
	$(PY) -m benchmarks.cdc $(BENCH_ARGS)

unit: install
	$(PY) -m pytest tests/unit dbt/adapters/deltamerge

lint: install
	$(VENV)/bin/ruff check dbt tests examples benchmarks tools
	$(VENV)/bin/mypy dbt/adapters/deltamerge
	@# Tests and benchmarks name only what the package has (a tier run only in CI called a removed function).
	@if $(VENV)/bin/mypy tests benchmarks --check-untyped-defs --follow-imports=silent --ignore-missing-imports 2>&1 \
		| grep -E 'Module ("[^"]*" )?has no attribute|\[name-defined\]|Module .* does not explicitly export'; then \
		echo "lint: tests or benchmarks name something the package does not have"; exit 1; fi
	@# The layout's rules (docs/architecture.md, "Modules"): root size, no import cycle, layers, sizes, maps.
	$(PY) tools/lint_layout.py
	@# The package must run on Spark Connect sessions too: no JVM handles, no RDDs.
	@if grep -rnE --include='*.py' '_jvm|_jsparkSession|_jdf|sparkContext|\.rdd\b|_instantiatedSession|py4j' dbt/adapters/deltamerge; then \
		echo "lint: JVM access (py4j) in dbt/adapters/deltamerge; use public PySpark APIs that work over Spark Connect"; exit 1; fi

clean:
	-test -x $(VENV)/bin/deltamerge-server && $(VENV)/bin/deltamerge-server stop --warehouse examples/shop/warehouse
	rm -rf $(VENV) examples/shop/warehouse examples/shop/target examples/shop/logs
