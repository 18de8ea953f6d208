"""A package outside cogtestbed adds an LLM backend and an experiment without touching the package
(issue 51, item 3): built here in a temporary folder from the walk-through's ``coin-guess``
(``docs/examples/coinguess``) and declared through the entry-point groups ``cogtestbed.backends``
and ``cogtestbed.experiments``; its model has no hand-written gradient (``loglik_kernel``: the
gradient is taken by finite differences); its own pytest run uses ``parametrize_with_checks``
and plays the experiment with its backend through ``ct.run``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import cogtestbed as ct
from cogtestbed import registry
from cogtestbed.llm_adapters.clients import backends

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "docs" / "examples" / "coinguess"
NAME = "plug-coins"

NOGRAD = '''
"""The coin-guess model without a hand-written gradient: its kernel returns the log-likelihood only."""

import math

import numpy as np
from numba import njit

from .models import Softmax


@njit(cache=True)
def softmax_loglik(theta, obs_subject, y, ev):
    """log P(y) per guess: log σ(±βL)."""
    ll = np.empty(y.shape[0])
    for i in range(y.shape[0]):
        x = theta[obs_subject[i], 0] * ev[i]
        log_p = -math.log1p(math.exp(-x)) if x > 0 else x - math.log1p(math.exp(x))
        ll[i] = log_p if y[i] == 1 else log_p - x
    return ll


class SoftmaxNoGradient(Softmax):
    pointwise_kernel = None
    loglik_kernel = softmax_loglik


MODELS = {"softmax": SoftmaxNoGradient()}
'''

BACKEND = '''
"""An LLM backend from outside cogtestbed: ``echo:WORD`` answers "WORD coin" to every prompt."""

from cogtestbed.extend import Backend, GenerateRequest, Generation, LLMClient


class EchoClient(LLMClient):
    backend = "echo"
    chat = False

    def __init__(self, model):
        self.model = model

    async def agenerate(self, request: GenerateRequest) -> Generation:
        return Generation(text=f" {self.model} coin", prompt_tokens=1, completion_tokens=2, finish_reason="stop")


def make_echo(model, *, base_url=None, mode="auto", **options):
    return EchoClient(model)


BACKEND = Backend("echo", make_echo, remote=False, description="answers MODEL coin")
'''

#: The package's own test file: one test per conformance check, and a run of its backend.
OWN_TESTS = '''
import cogtestbed as ct
from cogtestbed.extend import parametrize_with_checks

CHECKS = ["spec_declaration", "tables_module", "phases", "parameter_bounds", "pointwise_likelihood",
          "likelihood_gradient", "search_objective", "lapse_likelihood"]  # the whole suite: the slow test


@parametrize_with_checks(["plug-coins"], checks=CHECKS)
def test_conformance(spec, check):
    check(spec)


def test_the_echo_backend_plays_the_experiment(tmp_path):
    result = ct.run("plug-coins", llm="echo:heads", output=tmp_path / "run", subjects=2, seed=1,
                    design={"n_guesses": 5}, cache=str(tmp_path / "cache"))
    assert result.status == "complete"
    assert len(result.trials) == 10 and result.trials["valid"].all() and (result.trials["action"] == 1).all()
'''


@pytest.fixture(scope="module")
def plugin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The folder holding the package ``plug_coins`` and its distribution's entry points."""
    root = tmp_path_factory.mktemp("plugin")
    package = root / "plug_coins"
    shutil.copytree(EXAMPLE, package, ignore=shutil.ignore_patterns("__pycache__"))
    spec = package / "spec.py"
    spec.write_text(spec.read_text().replace('name="coin-guess"', f'name="{NAME}"').replace(
        "from .models import MODELS, coin_metrics", "from .models import coin_metrics\nfrom .nograd import MODELS"))
    (package / "nograd.py").write_text(NOGRAD.lstrip())
    (package / "backend.py").write_text(BACKEND.lstrip())
    (root / "test_plug_coins.py").write_text(OWN_TESTS.lstrip())
    dist = root / "plug_coins-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: plug-coins\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(textwrap.dedent(f"""\
        [cogtestbed.experiments]
        {NAME} = plug_coins.spec:SPEC

        [cogtestbed.backends]
        echo = plug_coins.backend:BACKEND
        """))
    sys.path.insert(0, str(root))
    _forget_plugins()
    try:
        yield root
    finally:
        sys.path.remove(str(root))
        _forget_plugins()


def _forget_plugins() -> None:
    registry.EXPERIMENTS.forget_installed()
    registry.EXPERIMENTS.unregister(NAME)
    backends.BACKENDS.forget_installed()


def test_the_entry_points_add_a_backend_and_an_experiment(plugin: Path) -> None:
    from cogtestbed.llm_adapters import backend_names, make_client

    assert NAME in ct.experiments() and "echo" in backend_names()
    client = make_client("echo:tails")
    assert type(client).__module__ == "plug_coins.backend" and client.generate("Which coin?").text == " tails coin"
    with pytest.raises(ct.errors.InputError, match=r"one of openai, anthropic, hf, echo \(e.g."):
        make_client("nope:x")
    with pytest.raises(ct.errors.InputError, match="a local echo model has none"):
        make_client("echo:heads", base_url="http://127.0.0.1:1")
    spec = ct.get_experiment(NAME)
    assert spec.env_cls.experiment == NAME and spec.agents["softmax"].experiment == NAME  # the name, once
    model = type(spec.models["softmax"])
    assert model.experiment == NAME and model.pointwise_kernel is None and model.loglik_kernel is not None


def test_a_backend_registered_in_the_process(plugin: Path) -> None:
    from plug_coins.backend import make_echo

    from cogtestbed.extend import register_backend
    from cogtestbed.llm_adapters import make_client

    try:
        register_backend("echo2", make_echo, remote=False)
        assert register_backend("echo2", make_echo, remote=False).name == "echo2"  # the same again: a no-op
        assert make_client("echo2:heads").generate("?").text == " heads coin"
        with pytest.raises(ct.errors.InputError, match="already registered"):
            register_backend("echo", make_echo)
        with pytest.raises(ct.errors.InputError, match="already registered"):
            register_backend("openai", make_echo)
    finally:
        backends.unregister_backend("echo2")


def test_the_model_without_a_gradient_matches_the_hand_gradient(plugin: Path) -> None:
    """The finite-difference gradient agrees with the walk-through's exact one, the MLE too."""
    from plug_coins.models import Softmax
    from plug_coins.nograd import SoftmaxNoGradient

    exact, numeric = Softmax(), SoftmaxNoGradient()
    trials = ct.simulate(ct.get_experiment(NAME), "softmax", subjects=4, seed=3)
    data = exact.subject_data(trials)
    for subject in data:
        for beta in (0.0, 0.3, 2.0, 40.0, 100.0):  # both bounds included (one-sided differences there)
            nll, grad = exact.nll_grad(np.array([beta]), data[subject])
            nll_fd, grad_fd = numeric.nll_grad(np.array([beta]), data[subject])
            assert nll_fd == nll
            assert abs(grad_fd[0] - grad[0]) <= 1e-6 * (1 + abs(grad[0])) * (1e3 if beta in (0.0, 100.0) else 1)
    a, b = exact.fit_identified(trials), numeric.fit_identified(trials)
    np.testing.assert_allclose(b["beta"].to_numpy(), a["beta"].to_numpy(), rtol=1e-5)


def test_the_package_runs_its_own_pytest_with_parametrize_with_checks(plugin: Path) -> None:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{plugin}"}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA",
                          "test_plug_coins.py"], capture_output=True, text=True, cwd=plugin, env=env, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "9 passed" in run.stdout, run.stdout[-2000:]
    assert "test_conformance[plug-coins-likelihood_gradient]" in run.stdout


def test_parametrize_with_checks_marks_expected_failures_and_refuses_unknown_checks(plugin: Path) -> None:
    from dataclasses import replace

    from cogtestbed.extend import parametrize_with_checks

    spec = replace(ct.get_experiment(NAME), name="plug-coins-xfail", expected_failures={"phases": "a made-up reason"})
    mark = parametrize_with_checks([spec], checks=["phases", "spec_declaration"]).mark  # type: ignore[attr-defined]
    assert mark.args[0] == ("spec", "check")
    params = {p.id: p for p in mark.args[1]}
    assert set(params) == {"plug-coins-xfail-phases", "plug-coins-xfail-spec_declaration"}
    (xfail,) = params["plug-coins-xfail-phases"].marks
    assert xfail.name == "xfail" and xfail.kwargs["strict"] and "made-up" in xfail.kwargs["reason"]
    assert not params["plug-coins-xfail-spec_declaration"].marks
    with pytest.raises(ct.errors.InputError, match="unknown conformance check"):
        parametrize_with_checks([spec], checks=["nope"])


@pytest.mark.slow
def test_the_model_without_a_gradient_passes_every_check(plugin: Path) -> None:
    report = ct.check(NAME)
    assert report.passed, report.table()
