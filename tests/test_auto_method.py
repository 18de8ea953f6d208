"""``method="auto"`` (issue 54, item 2: a first call that compiles nothing): a small first run of a
process runs the batch path's kernels as plain Python (:mod:`cogtestbed.interpreted`), every other run
compiles them, and the table is the same either way, for every experiment and agent."""

from __future__ import annotations

import dis
import io
import json
import math
import os
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import cogtestbed as ct
from cogtestbed import interpreted as interpreted_module
from cogtestbed import simulation
from cogtestbed.errors import InputError
from cogtestbed.inference.instrumental import prob_arm0, prob_arm0_python, rw_learning_rate
from cogtestbed.interpreted import _LIBM_NUMPY, interpreted, interpreting, is_interpreting, kernel
from cogtestbed.lapse import Lapse
from cogtestbed.numerics import gamma_draw, splitmix64_mix, splitmix64_next
from cogtestbed.registry import experiment_names, get_experiment

ROOT = Path(__file__).resolve().parents[1]
PARAMS = {"alpha_pos": 0.4, "alpha_neg": 0.2, "beta": 5.0}
#: Subjects a case of the matrix simulates: at most ~0.2 s of interpreted Python each.
SUBJECTS = {"magnitude": 3, "revealed-belief": 2}
#: Designs the matrix test plays instead of the default: belief coherence's every phase over 20 contexts
#: once (160 steps a session, not 8,000: 50 µs a step interpreted).
SMALL_DESIGNS: dict[str, dict[str, int]] = {"belief-coherence": {"n_contexts": 20, "n_reps": 1}}


def parquet(table: pd.DataFrame) -> bytes:
    out = io.BytesIO()
    table.to_parquet(out)
    return out.getvalue()


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


def test_an_interpreted_kernel_is_the_python_numba_compiled() -> None:
    """A twin is the dispatcher's Python with its dispatchers twinned (nothing it calls compiles), numpy's
    transcendentals the C library's (as numba's compiled code calls them), uint64 arithmetic wrapping."""
    twin = interpreted(splitmix64_next)
    assert twin is not splitmix64_next and twin.__code__ is splitmix64_next.py_func.__code__
    assert twin.__globals__["splitmix64_mix"] is interpreted(splitmix64_mix)
    assert interpreted(math.exp) is math.exp  # not a dispatcher: itself
    x = np.random.default_rng(1).normal(0.0, 30.0, 1_000)
    assert _LIBM_NUMPY.exp(x).tolist() == [math.exp(v) for v in x]
    assert _LIBM_NUMPY.log(2.5) == math.log(2.5) and _LIBM_NUMPY.sqrt is np.sqrt
    state = np.uint64(2**64 - 3)
    with interpreting():
        assert is_interpreting() and kernel(gamma_draw) is not gamma_draw
        assert kernel(splitmix64_next)(state) == splitmix64_next(state)  # wraps, as compiled, silently
        assert kernel(gamma_draw)(0.7, state) == gamma_draw(0.7, state)
    assert not is_interpreting() and kernel(gamma_draw) is gamma_draw


def test_auto_interprets_once_a_process_within_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    exp = get_experiment("instrumental-learning")
    rwpm, steps = exp.agent("rw-pm"), exp.env_cls.max_steps(exp.env_cls.design_cls())
    most = int(simulation.INTERPRETED_BUDGET_S / (rwpm.interpreted_step_us * 1e-6 * steps))
    monkeypatch.setattr(simulation, "_auto_interpreted_runs_left", [1])
    assert simulation.resolve_method("auto", rwpm, most + 1, steps) == "batch"  # over the budget
    assert simulation.resolve_method("auto", rwpm, most, steps) == "interpreted"
    assert simulation.resolve_method("auto", rwpm, 5, steps) == "batch"  # once a process: a loop compiles
    assert simulation.resolve_method("step", rwpm, 5_000, steps) == "step"
    assert simulation.resolve_method("interpreted", rwpm, 5_000, steps) == "interpreted"
    monkeypatch.setattr(simulation, "_auto_interpreted_runs_left", [1])
    belief = get_experiment("belief-coherence")
    heavy, belief_steps = belief.agent("logit-rum"), belief.env_cls.max_steps(belief.env_cls.design_cls())
    assert simulation.resolve_method("auto", heavy, 20, belief_steps) == "batch"  # 160,000 steps at 10 µs
    assert simulation.resolve_method("auto", heavy, 11, belief_steps) == "interpreted"  # 88,000: 0.88 s
    with pytest.raises(InputError, match="'auto', 'batch', 'interpreted', 'step'"):
        simulation.resolve_method("fast", rwpm, 1, 1)


def _cases() -> list[tuple[str, str]]:
    return [(name, agent) for name in experiment_names() for agent in get_experiment(name).agents]


def drawn_params(agent_cls: type, n: int, seed: int) -> dict[str, np.ndarray]:
    """Per-subject parameters across their bounds: subject 0 at each lower bound, subject 1 at each upper
    bound (where finite), the rest uniform between (an infinite bound: the default ± 10)."""
    rng = np.random.default_rng(seed)
    out = {}
    for p in agent_cls.parameters:
        lo = p.lower if math.isfinite(p.lower) else p.default - 10.0
        hi = p.upper if math.isfinite(p.upper) else p.default + 10.0
        values = rng.uniform(lo, hi, n)
        values[0], values[1 % n] = lo, hi
        out[p.name] = values
    return out


@pytest.mark.parametrize(("experiment", "agent"), _cases())
def test_interpreted_gives_the_compiled_table(experiment: str, agent: str) -> None:
    """Across the matrix (every experiment's every agent): the interpreted batch path's table is the compiled
    one's, byte for byte, at the default parameters, and at parameters across their bounds (the bounds
    themselves included) with invalid and random answers."""
    exp = get_experiment(experiment)
    n = SUBJECTS.get(experiment, 4)
    design = exp.env_cls.design_cls(**SMALL_DESIGNS.get(experiment, {}))
    bounds = drawn_params(exp.agent(agent), n, 7)
    for seed, params, lapse in ((0, None, None), (7, bounds, Lapse(invalid=0.1, random=0.1))):
        compiled = simulation.simulate(experiment, agent, n, seed, params, design, method="batch", lapse=lapse)
        python = simulation.simulate(experiment, agent, n, seed, params, design, method="interpreted", lapse=lapse)
        assert parquet(python) == parquet(compiled), (seed, params, lapse)


_REDUCTIONS = ("sum", "mean", "dot", "prod", "std", "var", "matmul", "average")
#: (kernel, method) pairs the lint allows: what they reduce is integer (exact in any order).
_INTEGER_REDUCTIONS = {("_session_rows", "sum")}


def _unsafe_operations(code: types.CodeType, where: str) -> list[str]:
    """The operations in ``code`` (and the code nested in it) that numba compiles differently from how
    CPython runs them: a power with a constant exponent (numba multiplies; CPython calls ``pow``, not
    always correctly rounded) and float reductions or products (numba sums in order, numpy pairwise)."""
    found = []
    ops = list(dis.get_instructions(code))
    for before, op in zip(ops, ops[1:], strict=False):
        if op.opname == "BINARY_OP" and op.argrepr in ("**", "**=") and before.opname == "LOAD_CONST":
            found.append(f"{where}: ** {before.argval!r} (line {op.positions.lineno if op.positions else '?'})")
        if op.opname == "BINARY_OP" and op.argrepr in ("@", "@="):
            found.append(f"{where}: @")
        if op.opname in ("LOAD_ATTR", "LOAD_METHOD") and op.argval in _REDUCTIONS \
                and (code.co_name, op.argval) not in _INTEGER_REDUCTIONS:
            found.append(f"{where}: .{op.argval}")
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found += _unsafe_operations(const, f"{where}.{const.co_name}")
    return found


def test_the_kernels_a_simulation_interprets_use_only_operations_that_agree() -> None:
    """Every kernel the matrix's interpreted runs reach (lapses included) is free of the operations whose
    compiled and interpreted results differ: the lint that catches a ``y ** 3`` before a parameter value
    that reaches it does (the matrix test's draws may miss a branch)."""
    for name, agent in _cases():
        design = get_experiment(name).env_cls.design_cls(**SMALL_DESIGNS.get(name, {}))
        simulation.simulate(name, agent, 1, 3, design=design, method="interpreted",
                            lapse=Lapse(invalid=0.1, random=0.1))
    reached = list(interpreted_module._TWINS)
    assert len(reached) > 50
    found = [f for d in reached for f in _unsafe_operations(d.py_func.__code__, d.py_func.__qualname__)]
    assert found == []


def test_gamma_draw_interpreted_is_compiled_over_many_states() -> None:
    """The Marsaglia–Tsang gamma draw (collider's Beta noise, revealed belief's noise), interpreted and
    compiled, over 2,000 states and shapes from 0.05 to 500: the same state and draw."""
    rng = np.random.default_rng(5)
    with interpreting():
        python = kernel(gamma_draw)
    for state, a in zip(rng.integers(0, 2**63, 2_000, dtype=np.uint64), 10 ** rng.uniform(-1.3, 2.7, 2_000),
                        strict=True):
        assert python(float(a), np.uint64(state)) == gamma_draw(float(a), np.uint64(state))


def test_auto_gives_the_batch_paths_table_and_records_the_path(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(simulation, "_auto_interpreted_runs_left", [1])
    auto = ct.simulate("two-step", "hybrid", subjects=20, seed=3, output=tmp_path / "auto.parquet",
                       lapse_random=0.05)
    batch = ct.simulate("two-step", "hybrid", subjects=20, seed=3, method="batch", output=tmp_path / "batch.parquet",
                        lapse_random=0.05)
    assert auto.equals(batch)
    assert (tmp_path / "auto.parquet").read_bytes() == (tmp_path / "batch.parquet").read_bytes()
    recorded = [json.loads((tmp_path / f"{n}.parquet.manifest.json").read_text())["method"] for n in ("auto", "batch")]
    assert recorded == ["interpreted", "batch"]


_PROBE = ("import sys\nfrom numba.core import event\nseen = []\n"
          "class L(event.Listener):\n"
          "    def on_start(self, ev): seen.append(ev.data['dispatcher'].py_func.__name__)\n"
          "    def on_end(self, ev): pass\n"
          "event.register('numba:compile', L())\nimport cogtestbed as ct\n{calls}\nprint('compiled', seen)\n")


def _compiled_in_a_fresh_process(calls: str, tmp_path: Path) -> str:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba"), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", _PROBE.format(calls=calls)], capture_output=True, text=True,
                          env=env, check=True)
    return done.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize("extra", [{}, {"lapse_random": 0.2, "lapse_invalid": 0.1}])
def test_a_first_small_command_compiles_no_kernel(extra: dict[str, float], tmp_path: Path) -> None:
    """The README's first command in a fresh process with an empty numba cache: numba compiles nothing."""
    call = (f"ct.simulate('instrumental-learning', 'rw-pm', subjects=50, seed=1, params={PARAMS!r}, "
            f"output={str(tmp_path / 't.parquet')!r}, **{extra!r})")
    assert _compiled_in_a_fresh_process(call, tmp_path) == "compiled []"


def test_every_experiment_interpreted_compiles_no_kernel(tmp_path: Path) -> None:
    """Every experiment's agents on the interpreted path, lapses included, in a fresh process with an empty
    numba cache: numba compiles nothing (every kernel a simulation calls is called through ``kernel``)."""
    calls = "\n".join(
        f"ct.simulate({name!r}, {agent!r}, subjects=1, seed=2, method='interpreted', lapse_random=0.2, "
        "lapse_invalid=0.1)"
        for name, agent in _cases() if name != "belief-coherence" or agent in ("logit-rum", "random"))
    assert _compiled_in_a_fresh_process(calls, tmp_path) == "compiled []"


def test_a_refused_call_or_a_batch_run_leaves_auto_on_the_batch_path(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The one interpreted run is not spent by a call refused before it simulates; after a compiled run
    "auto" compiles."""
    monkeypatch.setattr(simulation, "_auto_interpreted_runs_left", [1])
    with pytest.raises(InputError):
        ct.simulate("instrumental-learning", "rw-pm", subjects=5, seed=1, form_sd={"beta": 0.1})
    assert simulation._auto_interpreted_runs_left == [1]
    ct.simulate("instrumental-learning", "rw-pm", subjects=5, seed=1, method="batch")
    ct.simulate("instrumental-learning", "rw-pm", subjects=5, seed=1, output=tmp_path / "t.parquet")
    assert json.loads((tmp_path / "t.parquet.manifest.json").read_text())["method"] == "batch"


def test_the_help_names_the_budget() -> None:
    """The command line's help (declared without importing the simulation) states INTERPRETED_BUDGET_S."""
    import dataclasses

    from cogtestbed.simulate_options import SimulatedSessions

    method = next(f for f in dataclasses.fields(SimulatedSessions) if f.name == "simulation")
    assert f"at most {simulation.INTERPRETED_BUDGET_S} s of Python" in str(method.metadata)
