"""Numbers that used to come with a RuntimeWarning: a log-transformed parameter far past its upper
bound on the search scale (exp overflowed) and the R-hat of a one-chain fit (nanmax of all NaN)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from cogtestbed.inference.hierarchical import Diagnostics, diagnose
from cogtestbed.registry import get_experiment


def test_a_log_parameter_past_its_bound_is_the_bound_without_overflow() -> None:
    """``to_natural`` gives what ``lower + exp(v)`` clipped into the bounds gave, with no overflow:
    the optimiser's estimates are unchanged (every value equal but the float at the bound itself)."""
    model = get_experiment("instrumental-learning").model("rw-pm")
    names = model.parameters.names
    beta = model.parameters["beta"]
    assert beta.transform == "log" and np.isfinite(beta.upper)
    z0 = model.to_search(np.array([p.default for p in model.parameters]))
    for v in [*np.linspace(-40.0, 40.0, 801), np.log(beta.upper - beta.lower), 709.0, 710.0, 1e4, np.inf]:
        z = z0.copy()
        z[names.index("beta")] = v
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = model.to_natural(z)
        with np.errstate(over="ignore"):
            old = min(max(float(beta.lower + np.exp(v)), beta.lower), beta.upper)
        assert got[names.index("beta")] == old or abs(got[names.index("beta")] - old) <= 2e-16 * beta.upper
        if v >= 20:
            assert got[names.index("beta")] == beta.upper
    z[names.index("beta")] = np.nan
    assert np.isnan(model.to_natural(z)[names.index("beta")])  # NaN stays NaN


def test_a_fit_without_r_hat_reports_null_with_its_reason() -> None:
    """One chain has no R-hat: null with the reason, the check failed, no all-NaN warning."""
    import arviz as az

    rng = np.random.default_rng(0)
    one_chain = az.from_dict(posterior={"a": rng.normal(size=(1, 300))},
                             sample_stats={"diverging": np.zeros((1, 300), dtype=bool)})
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        d = diagnose(one_chain)
    assert d.max_rhat is None and d.n_chains == 1
    assert d.rhat_reason == "R-hat compares chains and this fit ran 1; sample 2 or more"
    assert not d.ok and "R-hat not computed: R-hat compares chains" in d.verdict
    assert d.as_dict()["max_rhat"] is None and d.as_dict()["max_rhat_reason"] == d.rhat_reason
    assert d.report().startswith("max R-hat null (<= 1.01)")
    assert d.min_ess_bulk > 100  # the ESS checks still have their values
    two = az.from_dict(posterior={"a": rng.normal(size=(2, 300))},
                       sample_stats={"diverging": np.zeros((2, 300), dtype=bool)})
    d2 = diagnose(two)
    assert d2.max_rhat is not None and d2.max_rhat < 1.05 and d2.rhat_reason is None
    assert d2.as_dict()["max_rhat_reason"] is None
    constant = Diagnostics(None, 500.0, 500.0, 0, 2, 300, 1.0, "x", pd.DataFrame())
    assert constant.rhat_reason == "no sampled variable has an R-hat (their draws do not vary)"
