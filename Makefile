# gpuemu: `make demo` installs gpuemu and runs a bundled example; `make test` runs the test suite.
PYTHON ?= python3
STAMP := build/.installed

.PHONY: install demo test test-slow test-clients fuzz bench bench-stats bench-memory bench-schedule bench-cli coverage clean

$(STAMP): pyproject.toml setup.py emulator/memory/_core.c emulator/memory/_core.h emulator/memory/_integer_atomics.h emulator/memory/build_core.py \
		emulator/accel/_arith.c emulator/accel/_lanes.c emulator/accel/_turns.c emulator/accel/_arith.h emulator/accel/build_arith.py
	rm -f emulator/memory/_gpuemu_core.cpython-*.so emulator/accel/_gpuemu_arith.cpython-*.so
	$(PYTHON) -m pip install --quiet --disable-pip-version-check -e ".[test]"
	@mkdir -p build && touch $(STAMP)

install: $(STAMP)

demo: install
	$(PYTHON) -m emulator run examples/vecadd/vecadd.ptx --kernel vecadd --grid 4 --block 256 \
	    --arg @examples/vecadd/inputs/a_small.npy --arg @examples/vecadd/inputs/b_small.npy \
	    --arg zeros:f32:1000 --arg i32:1000 --out results/demo --json results/demo/stats.json
	$(PYTHON) tools/check_demo.py results/demo examples/vecadd/expected/vecadd_small

test: install
	$(PYTHON) -m pytest -q

# tests too slow for every run (a Thrust program whose build alone takes about a minute); .ci/run runs them
test-slow: install
	GPUEMU_SLOW_TESTS=1 $(PYTHON) -m pytest -q tests/test_cuda_programs.py -k thrust

# the client integrations (Triton, CUDA C++ via NVRTC, numba.cuda, Dask for --cluster) in a venv of their own with
# gpuemu's extras; torch is the CPU build (the one `pip install torch==2.13.0` finds on this project's machines).
# numba.cuda's tests run in a pytest of their own: `-p emulator.numba` puts gpuemu's libcuda.so.1 under numba before
# anything starts
CLIENTS_VENV ?= build/clients-venv
CLIENTS_TORCH ?= torch==2.13.0
CLIENT_EXTRAS ?= test,triton,cuda,numba,cluster
CLIENT_TESTS ?= tests/test_triton_backend.py tests/test_cuda_source.py tests/test_cluster.py
CLIENT_NUMBA_TESTS ?= tests/test_numba_client.py
# CuPy 12.3 pins numpy<1.29, so it gets a venv of its own
CUPY_VENV ?= build/cupy-venv
test-clients:
	test -x $(CLIENTS_VENV)/bin/python || $(PYTHON) -m venv $(CLIENTS_VENV)
	$(CLIENTS_VENV)/bin/python -m pip install --quiet --disable-pip-version-check "$(CLIENTS_TORCH)"
	$(CLIENTS_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -e ".[$(CLIENT_EXTRAS)]"
	TRITON_DEFAULT_FP_FUSION=1 $(CLIENTS_VENV)/bin/python -m pytest -q $(CLIENT_TESTS)
	$(CLIENTS_VENV)/bin/python -m pytest -q -p emulator.numba $(CLIENT_NUMBA_TESTS)
	test -x $(CUPY_VENV)/bin/python || $(PYTHON) -m venv $(CUPY_VENV)
	$(CUPY_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -e ".[test,cupy]"
	$(CUPY_VENV)/bin/python -m pytest -q tests/test_cupy_client.py

# a longer fuzzing run: N API mutants and N/10 CLI ones (make fuzz N=100000 SEED=42 JOBS=8)
N ?= 20000
JOBS ?= 2
fuzz: install
	GPUEMU_FUZZ_CASES=$(N) GPUEMU_FUZZ_CLI_CASES=$$(( $(N) / 10 )) GPUEMU_FUZZ_JOBS=$(JOBS) \
	    $(if $(SEED),GPUEMU_FUZZ_SEED=$(SEED)) $(PYTHON) -m pytest -q tests/test_fuzz.py -k mutants

bench: install
	$(PYTHON) bench/run.py
	$(PYTHON) bench/schedule_cost.py

bench-stats: install
	$(PYTHON) bench/stats_cost.py

bench-memory: install
	$(PYTHON) bench/memory_peak.py

bench-schedule: install
	$(PYTHON) bench/schedule_cost.py

bench-cli: install
	$(PYTHON) bench/cli_overhead.py

coverage:
	$(PYTHON) -m emulator isa --markdown > docs/COVERAGE.md

clean:
	rm -rf build results .pytest_cache
