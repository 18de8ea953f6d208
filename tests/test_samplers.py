"""Samplers as registered kinds (issue 73, item 2): fit_hierarchical dispatches through one registry, no
if-chain on names; every posterior carries its sampler's provenance; the Gibbs sampler is experimental."""

from __future__ import annotations

import ast
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest

from cogtestbed.errors import InputError
from cogtestbed.inference import hierarchical_sampling as hs
from cogtestbed.inference.samplers import SamplerKind, SamplingJob, provenance_of


def test_the_packages_samplers_are_registered_and_gibbs_is_experimental() -> None:
    assert hs.SAMPLERS.names()[:3] == ["nutpie", "pymc", "gibbs"]
    gibbs = hs.SAMPLERS.get("gibbs")
    assert gibbs.experimental and "EXPERIMENTAL" in gibbs.description
    assert not hs.SAMPLERS.get("nutpie").experimental and not hs.SAMPLERS.get("pymc").experimental
    assert gibbs.provenance()["sampler_version"] == metadata.version("cogtestbed")
    assert hs.SAMPLERS.get("nutpie").provenance() == {
        "sampler": "nutpie", "sampler_library": "nutpie", "sampler_version": metadata.version("nutpie"),
        "sampler_experimental": "false"}


def test_fit_hierarchical_has_no_if_chain_on_sampler_names() -> None:
    tree = ast.parse(Path(hs.__file__).read_text(encoding="utf-8"))
    compared = [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.Compare)
                and any(isinstance(c, ast.Constant) and c.value in ("nutpie", "pymc", "gibbs")
                        for c in [n.left, *n.comparators])]
    assert compared == []


def _fake_posterior(job: SamplingJob, state: object, draws: int, progress: object) -> object:
    import arviz as az

    rng = np.random.default_rng(job.seed)
    names = [v.name for v in job.pm_model.free_RVs]
    return az.from_dict(posterior={n: rng.normal(size=(job.chains, draws)) for n in names},
                        sample_stats={"diverging": np.zeros((job.chains, draws), dtype=bool)})


def test_a_registered_sampler_is_dispatched_to_and_its_provenance_written() -> None:
    import pymc as pm

    calls: list[int] = []

    def sample(job: SamplingJob, state: object, draws: int, progress: object) -> object:
        assert state == "set up"
        calls.append(draws)
        return _fake_posterior(job, state, draws, progress)

    kind = SamplerKind("fake-iid", "independent normal draws (a test)", "numpy", lambda job: "set up", sample)
    from cogtestbed.extend import register_sampler

    assert register_sampler(kind) is kind
    try:
        with pm.Model() as model:
            pm.Normal("x")
        fit = hs.fit_hierarchical(model, None, draws=400, tune=0, chains=2, sampler="fake-iid",
                                  warn=False, log_likelihood=False)
    finally:
        hs.SAMPLERS.unregister("fake-iid")
    assert calls == [400]
    assert fit.diagnostics.sampler == "fake-iid"
    assert provenance_of(fit.idata) == {"sampler": "fake-iid", "sampler_library": "numpy",
                                        "sampler_version": np.__version__, "sampler_experimental": "false"}
    assert fit.idata.posterior.attrs["sampler_version"] == np.__version__


def test_an_unknown_sampler_is_one_line_naming_the_registered_ones() -> None:
    with pytest.raises(InputError, match="sampler must be auto, nutpie, pymc, gibbs, got 'hmc'"):
        hs.fit_hierarchical(object(), None, sampler="hmc")


def test_a_population_file_keeps_the_samplers_provenance() -> None:
    import arviz as az

    from cogtestbed.inference.population import population_from_fit
    from cogtestbed.registry import get_experiment

    model = get_experiment("instrumental-learning").model("rw")
    rng = np.random.default_rng(0)

    post = {f"{p}_{s}": rng.gamma(2.0, size=(4, 200)) for p in model.parameters.names for s in ("mu", "sigma")}
    post["alpha"] = rng.normal(size=(4, 200, 3))
    idata = az.from_dict(posterior=post, sample_stats={"diverging": np.zeros((4, 200), dtype=bool)},
                         dims={"alpha": ["subject"]})
    hs.stamp(idata, hs.SAMPLERS.get("pymc"))
    fit = hs.BayesFit(idata, hs.diagnose(idata, 1.0, "pymc"), "rw")
    pop = population_from_fit(fit, name="t", experiment="instrumental-learning", model=model, allow_unconverged=True)
    assert pop.fit["sampler_library"] == "pymc" and pop.fit["sampler_version"] == metadata.version("pymc")


def test_every_shipped_population_names_its_sampler_and_version() -> None:
    """The shipped populations carry their sampler's provenance; the package's own sampler's with the commit
    it ran from and marked experimental (issue 73, item 2)."""
    from cogtestbed.inference.population import load_population, shipped_populations

    names = shipped_populations()
    assert len(names) >= 4
    for name in names:
        fit = load_population(f"human:{name}").fit
        kind = hs.SAMPLERS.get(fit["sampler"])
        assert (fit["sampler_library"], fit["sampler_experimental"]) == (kind.library, str(kind.experimental).lower())
        assert fit["sampler_version"] not in ("", "unknown")
        assert ("sampler_commit" in fit) == (kind.library == "cogtestbed"), name
    assert load_population("human:shahar2019").fit["sampler_commit"] == "0bc16e9"
