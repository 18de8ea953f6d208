"""Ctrl-C during a hierarchical fit stops the fit (issue 71's note: it took the command line's 5 s fallback).

nutpie's blocking ``sample`` and PyMC's ``pm.sample`` both answer a ``KeyboardInterrupt`` by returning the draws made
so far as if the run had ended; ``fit_hierarchical`` then reported that part of a run as the posterior.  The fit
now propagates the interrupt (``hierarchical_sampling._wait``, ``_whole_run``).  The chains run in parallel here
(``cores=2``, the default for two or more chains): PyMC's chains one after another (``cores=1``) each take their own
Ctrl-C, the next chain starting after it, so one Ctrl-C there ends the fit only once the last chain has run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from cli_runs import in_process

from cogtestbed.inference import hierarchical_sampling as hs

ROOT = Path(__file__).resolve().parents[1]


class _Sampler:
    def __init__(self, error: BaseException | None) -> None:
        self.error, self.cancelled = error, False

    def wait(self) -> str:
        if self.error is not None:
            raise self.error
        return "trace"

    def cancel(self) -> None:
        self.cancelled = True


def test_an_exception_while_nutpie_samples_cancels_the_run_and_propagates() -> None:
    done = _Sampler(None)
    assert hs._wait(done) == "trace" and not done.cancelled
    for error in (KeyboardInterrupt(), SystemExit(143), RuntimeError("x")):
        running = _Sampler(error)
        with pytest.raises(type(error)):
            hs._wait(running)
        assert running.cancelled


def test_pymcs_error_for_a_run_stopped_before_its_first_draw_is_still_pymcs() -> None:
    """The message ``_pymc_sample`` reads as an interrupt during tuning is the one PyMC raises when it chooses the
    chains of an interrupted run (``_choose_chains``, "we get here after a KeyboardInterrupt") none of which got past
    its tuning."""
    from pymc.backends.base import _choose_chains

    class _Trace:
        def __len__(self) -> int:
            return 50

    with pytest.raises(ValueError, match=hs.NO_DRAWS_YET):
        _choose_chains([_Trace(), _Trace()], 100)


def test_a_run_with_fewer_draws_than_asked_is_an_interrupt() -> None:
    import arviz as az

    def idata(chains: int, draws: int) -> object:
        return az.from_dict(posterior={"x": np.zeros((chains, draws))})

    whole = idata(2, 50)
    assert hs._whole_run(whole, 50, 2) is whole
    with pytest.raises(KeyboardInterrupt, match="sampling stopped after 49 of 50 draws"):
        hs._whole_run(idata(2, 49), 50, 2)
    with pytest.raises(KeyboardInterrupt, match=r"\(1 of 2 chains\)"):
        hs._whole_run(idata(1, 50), 50, 2)


CHILD = """
import signal
import sys

signal.signal(signal.SIGINT, signal.default_int_handler)  # a test worker may have started it ignoring SIGINT
from cogtestbed.inference import hierarchical_sampling
from cogtestbed.inference.hierarchical import fit_hierarchical
from cogtestbed.registry import get_experiment
from cogtestbed.simulation import simulate

exp = get_experiment("instrumental-learning")
trials = simulate("instrumental-learning", "rw", n_subjects=4, seed=0)
model = exp.model("rw")
# nutpie: 0, the native model (compiled by the first fit); 1e9, the Python path for both fits
hierarchical_sampling.PYTHON_RENT_LIMIT_S = float(sys.argv[2])
kw = dict(chains=2, cores=2, seed=0, warn=False, log_likelihood=False, sampler=sys.argv[1])
fit_hierarchical(model, trials, draws=20, tune=20, **kw)  # builds the sampler: the second fit samples at once
print("ready", flush=True)
fit = fit_hierarchical(model, trials, draws=2_000_000, tune=100, **kw)
print("returned", fit.idata.posterior.sizes["draw"], flush=True)
"""


@pytest.mark.parametrize(("sampler", "rent_limit"), [pytest.param("nutpie", "0", marks=pytest.mark.slow),
                                                     pytest.param("nutpie", "1e9", marks=pytest.mark.slow),
                                                     ("pymc", "0")],
                         ids=["nutpie-native", "nutpie-python-path", "pymc"])
def test_ctrl_c_while_sampling_stops_the_fit(sampler: str, rent_limit: str) -> None:
    """The old code printed "returned" with the draws made before the signal; now the child dies of the
    interrupt, within seconds.  (The nutpie cases are slow: the default suite signals a nutpie fit through
    ``cogtestbed fit`` below, each case a fresh interpreter's fit.)"""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    child = subprocess.Popen([sys.executable, "-c", CHILD, sampler, rent_limit], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    assert child.stdout is not None
    try:
        assert child.stdout.readline().strip() == "ready"
        time.sleep(2.0)  # inside the long run's sampling (nothing is compiled after "ready")
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)  # a hang guard: the long run itself would take far longer
    finally:
        child.kill()  # a run the signal did not stop must not outlive the test
        child.wait()
    assert "returned" not in out, out
    assert child.returncode != 0 and "KeyboardInterrupt" in err, err[-2000:]


@pytest.mark.slow
def test_ctrl_c_during_a_fits_sampling_ends_the_command_with_one_line(tmp_path: Path) -> None:
    """``cogtestbed fit --method hierarchical``: Ctrl-C once nutpie draws ends the command with ``error:
    interrupted`` alone (the old code also printed the error of summarising the part of a run nutpie returned) and
    status 130, writing nothing."""
    import re

    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    table, out = tmp_path / "t.parquet", tmp_path / "fit"
    in_process("simulate", "instrumental-learning", "-a", "rw", "--subjects", "4", "-o", str(table))
    child = subprocess.Popen([sys.executable, "-m", "cogtestbed", "fit", "rw", str(table), "--chains", "2",
                              "--draws", "100000", "-o", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=env, cwd=ROOT)
    assert child.stderr is not None
    lines = []
    try:
        for line in child.stderr:  # the progress lines; the first with a draw made: nutpie is sampling
            lines.append(line)
            if re.search(r": [1-9]\d*/\d+ draws", line):
                break
        child.send_signal(signal.SIGINT)
        _, rest = child.communicate(timeout=60)  # a hang guard: 100,000 draws would take far longer
    finally:
        child.kill()
        child.wait()
    errors = [line.strip() for line in [*lines, *rest.splitlines()] if line.startswith("error:")]
    assert child.returncode == 130 and errors == ["error: interrupted"], "".join(lines) + rest
    assert not out.exists()
