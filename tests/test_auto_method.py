"""``method="auto"`` (issue 54, item 2: a first call that compiles nothing): a small first run of an
agent whose step path is plain Python takes the step path, every other run the batch path, and the
table is the same either way."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import cogtestbed as ct
from cogtestbed import simulation
from cogtestbed.errors import InputError
from cogtestbed.inference.instrumental import prob_arm0, prob_arm0_python, rw_learning_rate
from cogtestbed.registry import get_experiment

ROOT = Path(__file__).resolve().parents[1]
PARAMS = {"alpha_pos": 0.4, "alpha_neg": 0.2, "beta": 5.0}


def test_the_python_choice_probability_has_the_kernels_bits() -> None:
    """The step path's plain-Python P(arm 0) equals the compiled one the kernel replays close calls with,
    bit for bit (same process, same C library ``exp``), over β·Δv from 1e-6 to 1e4 in size and ties."""
    rng = np.random.default_rng(0)
    n = 100_000
    beta = np.concatenate([rng.uniform(0.0, 20.0, n // 2), 10 ** rng.uniform(-3, 3, n - n // 2)])
    v0, v1 = (rng.normal(0.0, 1.0, n) * 10 ** rng.uniform(-3, 1, n) for _ in range(2))
    v1[:100] = v0[:100]  # x = 0
    for b, a, c in zip(beta, v0, v1, strict=True):
        assert prob_arm0_python(float(b), a, c) == prob_arm0(b, a, c)
    for delta in (-1.0, 0.0, 1e-300, 2.5):
        assert rw_learning_rate.py_func(0.3, 0.1, delta) == rw_learning_rate(0.3, 0.1, delta)


def test_auto_takes_the_step_path_once_for_a_small_run(monkeypatch: pytest.MonkeyPatch) -> None:
    exp = get_experiment("instrumental-learning")
    rwpm, steps = exp.agent("rw-pm"), exp.env_cls.max_steps(exp.env_cls.design_cls())
    monkeypatch.setattr(simulation, "_auto_step_runs_left", [1])
    assert simulation.resolve_method("auto", rwpm, 200, steps) == "batch"  # 19,200 steps: not small
    assert simulation.resolve_method("auto", rwpm, 50, steps) == "step"
    assert simulation.resolve_method("auto", rwpm, 50, steps) == "batch"  # once a process: a loop compiles
    assert simulation.resolve_method("step", rwpm, 5_000, steps) == "step"
    monkeypatch.setattr(simulation, "_auto_step_runs_left", [1])
    compiled = get_experiment("two-step").agent("hybrid")
    assert compiled.compiled_step and simulation.resolve_method("auto", compiled, 2, 20) == "batch"
    with pytest.raises(InputError, match="'auto', 'batch' or 'step'"):
        simulation.resolve_method("fast", rwpm, 1, 1)


@pytest.mark.parametrize("agent", ["rw-pm", "rw", "random"])
def test_auto_gives_the_batch_paths_table_and_records_the_path(agent: str, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    params = {k: v for k, v in PARAMS.items() if k in get_experiment("instrumental-learning").agent(agent)
              .parameters.names} | ({"alpha": 0.3} if agent == "rw" else {})
    monkeypatch.setattr(simulation, "_auto_step_runs_left", [1])
    auto = ct.simulate("instrumental-learning", agent, subjects=40, seed=3, params=params,
                       output=tmp_path / "auto.parquet", lapse_random=0.05)
    batch = ct.simulate("instrumental-learning", agent, subjects=40, seed=3, params=params, method="batch",
                        output=tmp_path / "batch.parquet", lapse_random=0.05)
    assert auto.equals(batch)
    assert (tmp_path / "auto.parquet").read_bytes() == (tmp_path / "batch.parquet").read_bytes()
    recorded = [json.loads((tmp_path / f"{n}.parquet.manifest.json").read_text())["method"] for n in ("auto", "batch")]
    assert recorded == ["step", "batch"]


@pytest.mark.parametrize("extra", [{}, {"lapse_random": 0.2, "lapse_invalid": 0.1}])
def test_a_first_small_command_compiles_no_kernel(extra: dict[str, float], tmp_path: Path) -> None:
    """The README's first command in a fresh process with an empty numba cache: numba compiles nothing
    (random lapses included: the environment's random answer is plain Python on the step path)."""
    probe = ("import sys\nfrom numba.core import event\nseen = []\n"
             "class L(event.Listener):\n"
             "    def on_start(self, ev): seen.append(ev.data['dispatcher'].py_func.__name__)\n"
             "    def on_end(self, ev): pass\n"
             "event.register('numba:compile', L())\nimport cogtestbed as ct\n"
             f"ct.simulate('instrumental-learning', 'rw-pm', subjects=50, seed=1, params={PARAMS!r}, "
             f"output={str(tmp_path / 't.parquet')!r}, **{extra!r})\nprint('compiled', seen)\n")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba"), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True)
    assert done.stdout.strip().splitlines()[-1] == "compiled []", done.stdout


def test_a_refused_call_or_a_batch_run_leaves_auto_on_the_batch_path(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The one step run is not spent by a call refused before it simulates; after a batch run (numba's
    kernels loaded) "auto" takes the batch path."""
    monkeypatch.setattr(simulation, "_auto_step_runs_left", [1])
    with pytest.raises(InputError):
        ct.simulate("instrumental-learning", "rw-pm", subjects=5, seed=1, form_sd={"beta": 0.1})
    assert simulation._auto_step_runs_left == [1]
    ct.simulate("instrumental-learning", "rw-pm", subjects=5, seed=1, method="batch")
    ct.simulate("instrumental-learning", "rw-pm", subjects=5, seed=1, output=tmp_path / "t.parquet")
    assert json.loads((tmp_path / "t.parquet.manifest.json").read_text())["method"] == "batch"


def test_the_help_names_the_small_run_size() -> None:
    """The command line's help (declared without importing the simulation) states SMALL_RUN_STEPS."""
    import dataclasses

    from cogtestbed.simulate_options import SimulatedSessions

    method = next(f for f in dataclasses.fields(SimulatedSessions) if f.name == "method")
    assert f"at most {simulation.SMALL_RUN_STEPS:,} steps" in str(method.metadata)
