"""``method="auto"``'s routing (issue 54; audit of 26 Nov 2026, findings 4–7 and 9): the path is resolved
once, up front (:func:`cogtestbed.simulation.chosen_path`); a run that plays the step path whatever its
method records "step" and spends no interpreted run; a call refused after the path is chosen gives the
run back; the estimate counts the memory probe's subject and the agent's design- and parameter-dependent
cost; revealed belief's random text answer compiles nothing on the interpreted path."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import cogtestbed as ct
from cogtestbed import simulation
from cogtestbed.api import core
from cogtestbed.errors import InputError
from cogtestbed.lapse import Lapse
from cogtestbed.outputs import OutputError
from cogtestbed.registry import get_experiment

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def one_interpreted_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts as a fresh process: its one interpreted run not yet spent."""
    monkeypatch.setattr(simulation, "_auto_interpreted_runs_left", [1])


def parquet(table: pd.DataFrame) -> bytes:
    out = io.BytesIO()
    table.to_parquet(out)
    return out.getvalue()


def manifest_method(path: Path) -> str:
    return str(json.loads(path.with_name(path.name + ".manifest.json").read_text())["method"])


def test_lapses_applied_after_the_fact_play_the_batch_path(tmp_path: Path) -> None:
    """Magnitude's agents play no lapse in their kernel, but its steps depend on no earlier answer: the
    lapses are applied to the batch run after the fact, so the run is interpreted and records it."""
    out = tmp_path / "m.parquet"
    ct.simulate("magnitude", "linear", subjects=2, seed=0, lapse_random=0.1, output=out)
    assert manifest_method(out) == "interpreted"
    assert simulation._auto_interpreted_runs_left == [0]


@pytest.mark.parametrize("method", ["auto", "batch", "interpreted"])
def test_lapses_the_kernel_cannot_play_record_the_step_path(method: str, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The same magnitude run where the steps depend on earlier answers (its environment marked so): no
    kernel plays the lapses and they cannot be applied after the fact, so the step path is played, under
    any method; the manifest says "step", "auto" spends no interpreted run, and the table is the one the
    step path gives."""
    exp = get_experiment("magnitude")
    monkeypatch.setattr(exp.env_cls, "answer_independent", False)
    design = exp.env_cls.design_cls(task="line-ratio", trials_per_session=5)  # 270 steps: the step path is slow
    assert simulation.plays_step(exp.env_cls, exp.agent("linear"), design, Lapse(0.0, 0.1))
    assert not simulation.plays_step(exp.env_cls, exp.agent("linear"), design, Lapse(0.0, 0.0))
    out = tmp_path / "m.parquet"
    table = ct.simulate("magnitude", "linear", subjects=1, seed=0, lapse_random=0.1, method=method, output=out,
                        design=design.model_dump())
    assert manifest_method(out) == "step"
    assert simulation._auto_interpreted_runs_left == [1]
    step = simulation.simulate("magnitude", "linear", 1, 0, design=design, method="step", lapse=Lapse(0.0, 0.1))
    assert parquet(table) == parquet(step)


def test_an_adaptive_session_records_the_step_path_and_spends_nothing(tmp_path: Path) -> None:
    out = tmp_path / "a.parquet"
    ct.simulate("temporal-discounting", "hyperbolic", subjects=1, seed=0, adaptive="k", trials=3, output=out)
    assert manifest_method(out) == "step"
    assert simulation._auto_interpreted_runs_left == [1]


def test_a_call_refused_after_the_path_is_chosen_keeps_the_interpreted_run(tmp_path: Path) -> None:
    """Refused inside the run (BART has no target for these balloons), or by another writer's claim on the
    output file: the process's one interpreted run is still there for the next call."""
    with pytest.raises(InputError, match="no target parameter for balloons with max_pumps=16"):
        ct.simulate("bart", "target", subjects=2, design=["max_pumps=16"])
    assert simulation._auto_interpreted_runs_left == [1]
    out = tmp_path / "t.parquet"
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (tmp_path / ".t.parquet.cogtestbed-writing").write_text(str(holder.pid))
        with pytest.raises(OutputError, match="being written by another command"):
            ct.simulate("instrumental-learning", "rw-pm", subjects=5, seed=1, output=out)
    finally:
        holder.kill()
        holder.wait()
    assert simulation._auto_interpreted_runs_left == [1]
    ct.simulate("instrumental-learning", "rw-pm", subjects=5, seed=1, output=out)  # the claim's holder is gone
    assert manifest_method(out) == "interpreted" and simulation._auto_interpreted_runs_left == [0]


def test_the_estimate_counts_the_memory_probes_subject(monkeypatch: pytest.MonkeyPatch) -> None:
    """``ct.simulate`` simulates one more subject on the chosen path (the memory check's probe): the
    estimate is of n + 1 subjects, so the largest n within the budget is one less than the path alone."""
    exp = get_experiment("instrumental-learning")
    rwpm, design = exp.agent("rw-pm"), exp.env_cls.design_cls()
    steps = int(exp.env_cls.max_steps(design))
    most = int(simulation.INTERPRETED_BUDGET_S / (rwpm.interpreted_cost_us(design, {}) * 1e-6 * steps))
    paths: list[str] = []

    def played(*args: Any) -> pd.DataFrame:
        paths.append(args[6])
        return pd.DataFrame()

    monkeypatch.setattr(core, "_simulate", played)
    ct.simulate("instrumental-learning", "rw-pm", subjects=most, seed=1)  # most + 1 over the budget
    ct.simulate("instrumental-learning", "rw-pm", subjects=most - 1, seed=1)
    assert paths == ["batch", "interpreted"]
    assert simulation.interpreted_estimate_s(rwpm, most + 1, steps, design) > simulation.INTERPRETED_BUDGET_S


def test_the_cost_depends_on_the_design_and_the_parameters() -> None:
    """Revealed belief's Dirichlet noise (a Gamma draw per option), the sampler's ``n_samples`` (one
    inverse-CDF draw each), the collider's Beta precision ``kappa`` (two Gamma draws) and belief
    coherence's miscalibration (the log-odds map, Newton steps for the tilt) raise the figure; a share
    of subjects raises it in proportion; other agents keep their declared figure."""
    revealed, collider = get_experiment("revealed-belief"), get_experiment("collider")
    dissonant, sampler = revealed.agent("dissonant"), revealed.agent("dissonant-sampler")
    design = revealed.env_cls.design_cls()
    assert dissonant.interpreted_cost_us(design, {}) == 25.0
    noisy = dissonant.NOISY_STEP_US
    assert noisy > 150.0  # measured up to 161 µs a step
    assert dissonant.interpreted_cost_us(design, {"noise": 0.5}) == noisy
    assert dissonant.interpreted_cost_us(design, {"noise": np.array([0.0, 1.0])}) == (25.0 + noisy) / 2
    assert sampler.interpreted_cost_us(design, {}) == 140.0  # n_samples = 100
    assert sampler.interpreted_cost_us(revealed.env_cls.design_cls(n_samples=1000), {}) == 1040.0
    assert sampler.interpreted_cost_us(revealed.env_cls.design_cls(n_samples=1), {}) == 41.0
    for name in collider.agents:
        assert collider.agent(name).interpreted_cost_us(None, {}) == 15.0
        assert collider.agent(name).interpreted_cost_us(None, {"kappa": 20.0}) == 35.0
    assert get_experiment("horizon").agent("info-bonus").interpreted_cost_us(None, {}) == 30.0
    belief = get_experiment("belief-coherence").agent("logit-rum")
    assert belief.interpreted_cost_us(None, {}) == belief.interpreted_step_us == 10.0
    assert belief.interpreted_cost_us(None, {"calib_slope": 1.0, "calib_bias": 0.0, "report_noise": 0.5}) == 10.0
    assert belief.interpreted_cost_us(None, {"calib_bias": 0.5}) == belief.MISCALIBRATED_STEP_US == 35.0
    assert belief.interpreted_cost_us(None, {"calib_slope": np.array([1.0, 2.0, 1.0, 1.0]),
                                             "calib_bias": np.array([0.0, 0.0, 0.0, -1.0])}) == 22.5
    assert get_experiment("belief-coherence").agent("random").interpreted_cost_us(None, {}) == 5.0
    # the audit's runs "auto" interpreted at 2-10x the budget now compile
    steps = int(revealed.env_cls.max_steps(design))
    assert simulation.resolve_method("auto", dissonant, 20, steps, design, {"noise": 1.0, "kappa": 50.0}) == "batch"
    big = revealed.env_cls.design_cls(n_samples=1000)
    assert simulation.resolve_method("auto", sampler, 3, steps, big, {}) == "batch"
    assert simulation.resolve_method("auto", dissonant, 20, steps, design, {}) == "interpreted"


def test_the_chosen_path_gives_the_run_back_only_when_the_block_raises() -> None:
    exp = get_experiment("instrumental-learning")
    rwpm, design = exp.agent("rw-pm"), exp.env_cls.design_cls()
    with pytest.raises(RuntimeError), simulation.chosen_path("auto", exp, rwpm, design, {}, 2) as path:
        assert path == "interpreted" and simulation._auto_interpreted_runs_left == [0]
        raise RuntimeError("refused")
    assert simulation._auto_interpreted_runs_left == [1]
    with simulation.chosen_path("auto", exp, rwpm, design, {}, 2) as path:
        assert path == "interpreted"
    assert simulation._auto_interpreted_runs_left == [0]
    with pytest.raises(InputError, match="method must be one of"), \
            simulation.chosen_path("fast", exp, rwpm, design, {}, 2):
        pass


_PROBE = ("from numba.core import event\nseen = []\n"
          "class L(event.Listener):\n"
          "    def on_start(self, ev): seen.append(ev.data['dispatcher'].py_func.__name__)\n"
          "    def on_end(self, ev): pass\n"
          "event.register('numba:compile', L())\nimport cogtestbed as ct\n{calls}\nprint('compiled', seen)\n")


def test_revealed_beliefs_random_text_answer_compiles_nothing_interpreted(tmp_path: Path) -> None:
    """A random lapse on a generated text step (``random_answer``'s uniform option) on the interpreted path,
    in a fresh process with an empty numba cache: numba compiles nothing."""
    call = ("ct.simulate('revealed-belief', 'rational', subjects=1, seed=3, method='interpreted', "
            "design=['staa_mode=generated'], lapse_random=0.3)")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba"), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", _PROBE.format(calls=call)], capture_output=True, text=True,
                          env=env, check=True)
    assert done.stdout.strip().splitlines()[-1] == "compiled []"


def test_auto_compiles_where_numba_uses_svml(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where numba vectorises with Intel's SVML, interpreted kernels would not agree bit for bit with the
    compiled ones: ``auto`` compiles."""
    exp = get_experiment("two-step")
    agent = exp.agent("hybrid")
    steps = exp.env_cls.max_steps(exp.env_cls.design_cls())
    monkeypatch.setattr(simulation, "_auto_interpreted_runs_left", [1])
    monkeypatch.setattr(simulation, "AGREES_WITH_COMPILED", False)
    assert simulation.resolve_method("auto", agent, 2, steps) == "batch"
    assert simulation._auto_interpreted_runs_left == [1]
    monkeypatch.setattr(simulation, "AGREES_WITH_COMPILED", True)
    assert simulation.resolve_method("auto", agent, 2, steps) == "interpreted"


def test_form_offsets_are_priced_as_shifted_parameters() -> None:
    """``--forms``/``--form-sd`` shift the parameters after the path is chosen, so the estimate sees each
    shifted parameter one SD up (``api.core._cost_params``): calibrated belief subjects given a form SD on
    κ or δ are priced as miscalibrated (issue 54); an SD of 0, or on another parameter, changes nothing."""
    from cogtestbed.api.core import _cost_params

    belief = get_experiment("belief-coherence").agent("logit-rum")
    assert belief.interpreted_cost_us(None, _cost_params(belief, {}, {})) == 10.0
    assert belief.interpreted_cost_us(None, _cost_params(belief, {}, {"calib_slope": 0.0})) == 10.0
    assert belief.interpreted_cost_us(None, _cost_params(belief, {}, {"report_noise": 0.5})) == 10.0
    for name in ("calib_slope", "calib_bias"):
        assert belief.interpreted_cost_us(None, _cost_params(belief, {}, {name: 0.5})) == 35.0
