"""``plan --looks auto`` (issue 40): the search over looks, spending and futility, its fair fixed
comparator, non-binding futility, and the analytic bounds against published values."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from cogtestbed.planning.kinds.sequential import seqauto
from cogtestbed.planning.kinds.sequential.seqpaths import boundaries
from cogtestbed.planning.kinds.sequential.seqplan import operate
from cogtestbed.planning.kinds.sequential.sequential import (
    check_spending,
    constant_bounds,
    efficacy_bounds,
    mvn_reject,
)

LEVEL, TARGET = 0.05, 0.80


@dataclasses.dataclass
class _Paths:
    z: np.ndarray
    est: np.ndarray
    reference: float | None = None


def brownian(reps: int, n_top: int, theta: float, seed: int) -> _Paths:
    """Exactly normal look statistics: Z_n = Σ x_i / √n with x_i ~ N(θ, 1), n = 2…n_top."""
    x = np.random.default_rng(seed).normal(theta, 1.0, size=(reps, n_top))
    n = np.arange(1, n_top + 1)
    z = np.cumsum(x, axis=1) / np.sqrt(n)
    est = np.cumsum(x, axis=1) / n
    return _Paths(z[:, 1:], est[:, 1:])


def test_hsd_bounds_match_gsdesign() -> None:
    """Hwang–Shih–DeCani γ = −4, 5 equally spaced looks, one-sided α = .025 (gsDesign sfHSD, the
    usual default of its gsDesign(): 3.2527 2.9860 2.6917 2.3737 2.0253)."""
    b = efficacy_bounds(np.arange(1, 6) / 5, 0.025, "hsd:-4")
    assert np.allclose(b, [3.2527, 2.9860, 2.6917, 2.3737, 2.0253], atol=2e-3)
    # γ = 0 spends α linearly: its first bound is z at α/5
    assert efficacy_bounds(np.arange(1, 6) / 5, 0.025, "hsd:0")[0] == pytest.approx(2.5758, abs=1e-3)
    for bad in ("hsd:x", "hsd:99", "haybittle"):
        with pytest.raises(ValueError):
            check_spending(bad)


def test_classical_bounds_from_scipy_multivariate_normal() -> None:
    """Pocock (1977) and O'Brien–Fleming (1979), K = 5, two-sided α = .05: c = 2.413 and 2.040
    (Jennison & Turnbull 2000, tables 2.1 and 2.3), solved on scipy's multivariate normal; and the
    recursive integration's Lan–DeMets bounds spend exactly α under scipy's joint normal."""
    assert constant_bounds(5, 0.05, "pocock")[0] == pytest.approx(2.413, abs=2e-3)
    obf = constant_bounds(5, 0.05, "obrien-fleming")
    assert obf[-1] == pytest.approx(2.040, abs=2e-3)
    assert obf[0] == pytest.approx(2.040 * math.sqrt(5), abs=5e-3)
    t = np.arange(1, 6) / 5
    assert mvn_reject(t, efficacy_bounds(t, 0.025, "pocock")) == pytest.approx(0.025, abs=2e-5)


def test_non_binding_type1_at_least_binding() -> None:
    """On the same null paths, ignoring futility stops can only add rejections: non-binding type-I ≥
    binding, strictly here (a futility stop loses some later crossings)."""
    paths = brownian(4000, 30, 0.0, 1)
    sizes = (6, 12, 18, 24, 30)
    b = boundaries(sizes, LEVEL, "pocock", True, TARGET)
    cols = [n - 2 for n in sizes]
    binding = operate(b, paths.z, paths.est, cols, 1.0, None).rate
    non_binding = operate(seqauto.strip_futility(b), paths.z, paths.est, cols, 1.0, None).rate
    assert non_binding > binding
    assert non_binding == pytest.approx(LEVEL, abs=3 * math.sqrt(LEVEL * (1 - LEVEL) / 4000))


def test_auto_search_meets_alpha_and_power_on_fresh_studies() -> None:
    """The search on exactly normal paths (a fixed design of ~30 units has 80 % power): analytic bounds
    are chosen (normal theory holds), the chosen rule keeps type-I ≤ α and power ≥ .80 on fresh
    studies, the fair fixed comparator sits at the normal-theory size, and the sequential design's
    expected size is below it."""
    theta = (1.959964 + 0.841621) / math.sqrt(30)
    n_top = 40
    sizes = tuple(range(2, n_top + 1))
    eff, cal, nul = brownian(1000, n_top, theta, 2), brownian(1000, n_top, 0.0, 3), brownian(1000, n_top, 0.0, 4)
    found = seqauto.search(eff, cal, nul, sizes, range(12, n_top + 1), range(15, n_top + 1), 24, LEVEL, TARGET, 1.0,
                           False, looks=(2, 3, 5), families=("obrien-fleming", "pocock", "hsd:-2"))
    assert found.passing
    assert found.searched["analytic"] > 0.8 * found.searched["rules"]
    fair = found.fair["chosen"]
    # both calibrated to alpha less a margin (.0375 at 1,000 null studies): z at .01875 is 2.08, n ~ 30 x 1.09
    assert found.searched["calibration_level"] == pytest.approx(0.0375, abs=5e-4)
    assert fair is not None and 28 <= fair["size"] <= 37 and abs(fair["critical"] - 2.08) < 0.15
    top = found.passing[:seqauto.CONFIRM]
    cols = [s.columns for s in top]
    eff2, nul2 = brownian(4000, n_top, theta, 5), brownian(20000, n_top, 0.0, 6)
    chosen, rows, picked = seqauto.choose(top, cols, eff2, nul2, 1.0, LEVEL, TARGET, False)
    assert chosen is not None and picked is not None and rows[picked]["row"]["passes"]
    assert chosen.null.rate <= LEVEL
    assert chosen.effect.rate >= TARGET
    assert chosen.effect.units.mean() < 0.9 * fair["size"]


def test_fair_fixed_calibrates_a_liberal_statistic() -> None:
    """A statistic whose null is shifted up by 0.3 (a liberal test) gets a calibrated critical value
    ~0.3 above 1.96 and type-I α/2 upward on other null studies: the comparator spends α, not more."""
    n_top, reps = 30, 4000
    sizes = list(range(2, n_top + 1))
    cal, nul = brownian(reps, n_top, 0.0, 7), brownian(reps, n_top, 0.0, 8)
    cal.z += 0.3
    nul.z += 0.3
    eff = brownian(reps, n_top, 0.5, 9)
    fair = seqauto.fair_fixed(eff.z, cal.z, nul.z, sizes, 1.0, LEVEL, TARGET)
    row = fair["rows"][-1]
    assert row["critical"] == pytest.approx(1.96 + 0.3, abs=0.12)
    upward = float(np.mean(nul.z[:, -1] >= row["critical"]))
    assert upward == pytest.approx(LEVEL / 2, abs=3 * math.sqrt(0.025 * 0.975 / reps))


def test_looks_option_checks() -> None:
    from cogtestbed.planning.request import check_sequential_options, looks_option

    assert looks_option("auto") == "auto" and looks_option("5") == 5 and looks_option(None) is None
    with pytest.raises(ValueError, match="`looks` must be"):
        looks_option("many")
    with pytest.raises(ValueError, match="searches `spending`"):
        check_sequential_options("auto", "pocock", False, None, None, None, None)
    check_sequential_options("auto", "obrien-fleming", False, None, None, None, None)


@pytest.mark.slow
def test_plan_looks_auto_end_to_end_small_study() -> None:
    """``ct.plan(..., looks="auto")`` on a small RW± study (optimism bias 0.5, 200 studies per set):
    the chosen design keeps type-I ≤ α on its fresh null studies and power ≥ .80 on its fresh effect
    studies, names how its bounds were set and how futility counts, states the saving against the
    calibrated fixed test, and its run section is one ``run --plan`` accepts."""
    import cogtestbed as ct
    from cogtestbed.planning.kinds.sequential.seqpaths import checked_sequential

    plan = ct.plan("instrumental-learning", model="rw-pm", effect="optimism_bias=0.5", power=0.8,
                   llm="openai:gpt-4o-mini", looks="auto", seq_sims=200, null_sims=200, workers=2)
    seq = plan.sequential
    assert seq is not None and seq.get("chosen", True) is not None, seq.get("reason")
    assert seq["null"]["rejection_rate"] <= 0.05 and seq["null"]["sims"] == seqauto.FRESH_NULL_FACTOR * 200
    check = seq["null"]["type1_check"]  # issue 47: the fresh type-I with its one-sided upper bound
    fresh = seqauto.FRESH_NULL_FACTOR * 200  # issue 71: twice as many fresh nulls as a calibration set
    assert check["sims"] == fresh and check["upper"] > check["rate"] and check["meets"] == (check["upper"] <= 0.05)
    est = seq["saving"]["estimate"]
    assert est["interval"][0] < est["percent"] < est["interval"][1] and est["fixed_type1"]["sims"] == fresh
    assert est["interval_method"].startswith("joint percentile bootstrap")  # issue 68: null and effect together
    assert "nominal" not in seq["saving"]  # the statistic at nominal alpha is no design a researcher would run
    mle = seq["saving"]["mle_equal_power"]  # the comparator a researcher would run: the MLE test at equal power
    assert mle["interval"][0] < mle["percent"] < mle["interval"][1] and mle["power"] == 0.8
    assert any(line.startswith("  saving against the fixed plan's MLE test at nominal alpha and equal power")
               for line in seq["auto"]["lines"])
    assert not any("saving against the fixed plan at nominal alpha" in line for line in seq["auto"]["lines"])
    assert seq["assumptions"] and seq["robustness"]["worst"]["rate"] >= seq["robustness"]["rows"][0]["rate"]
    # the power printed is measured on fresh studies under the effect at the chosen rule (the confirmation's chose it)
    assert seq["effect"]["rejection_rate"] >= 0.80 - 3 * seq["effect"]["mc_se"]
    assert seq["design"]["calibration"]["method"] in ("analytic bounds", "simulated calibration")
    assert seq["saving"]["comparator"].startswith("fixed test calibrated") or seq["saving"]["fair"] is None
    assert seq["auto"]["searched"]["rules"] > 100 and seq["auto"]["confirmed"]
    if seq["design"]["futility"] is not None:
        assert seq["null"]["type1_futility"].startswith("futility stops ignored")
    checked_sequential(plan.payload["run"]["sequential"], "plan.json")
    # issue 71: the statistic simulated is the coarse-start MLE, recorded for the run's looks and printed
    assert plan.payload["run"]["sequential"]["statistic"]["fit"]["start_grid_size"] == 64
    assert any(line.startswith("  statistic: per-subject MLE from a 64-point") for line in seq["auto"]["lines"])


def test_output_names_bounds_method_and_futility_rule() -> None:
    """The text report says how the bounds were set and whether futility counts in the type-I error."""
    from cogtestbed.planning.kinds.sequential.seqpayload import _bounds_lines

    d = {"futility": [0.1, 2.0], "futility_binding": False,
         "calibration": {"method": "analytic bounds", "null_sims": 1000, "nominal_rate": 0.024,
                         "nominal_rate_mc_se": 0.005, "side_level": 0.025}}
    text = "\n".join(_bounds_lines(d))
    assert "analytic bounds" in text and "non-binding: type-I error computed ignoring futility stops" in text
    d = {**d, "futility_binding": True, "calibration": {"method": "simulated calibration", "null_sims": 1000,
                                                        "shift": -0.2, "shift_mc_error": 0.05, "side_level": 0.025,
                                                        "futility": "binding"}}
    text = "\n".join(_bounds_lines(d))
    assert "simulated calibration" in text and "moved by -0.200" in text
    assert "binding: type-I error computed with" in text


def test_subjects_fitted_counts_each_simulated_subject_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """``plan --looks auto``'s "subjects fitted" (plan.json ``units_simulated``) is the number of subjects its
    simulations fitted, each once: the null-study simulators are copies of the effect studies' and must start
    their count at 0 (they carried it over, counting the effect and confirmation studies twice: issue 54 item 4).
    The simulation is replaced by normal paths that report ``reps × n_top`` subjects per block."""
    from cogtestbed.planning.kinds.sequential import seqsim
    from cogtestbed.studies.driver import study_spec

    fitted: list[int] = []

    def fake(self: seqsim.Simulator, flat, reps):  # type: ignore[no-untyped-def]
        out = []
        for _fn, args in flat:
            payload, n_top, sizes, block, n = args[0], args[3], args[4], args[8], args[9]
            theta = 0.45 if '"effect_size":0.2' in payload.replace(" ", "") else 0.0
            p = brownian(n, n_top + 1, theta, 1000 + 7 * block + len(fitted))
            cols = [s - 2 for s in sizes]
            fitted.append(n * n_top)
            out.append(seqsim.Paths(p.z[:, cols], p.est[:, cols], 0.0, n * n_top))
        return out

    monkeypatch.setattr(seqsim.Simulator, "_execute", fake)
    spec = study_spec(kind="power", experiment="instrumental-learning", models=("rw-pm",), effect="optimism_bias",
                      effect_size=0.2, seed=0, trials=(96,))
    res = seqauto.plan_auto(spec, 26, 96, 1, TARGET, sims=200, null_sims=200, looks=(2, 4),
                            families=("pocock",))
    assert res.result.subjects == sum(fitted) > 0


def test_the_looks_auto_saving_is_against_the_mle_test_at_equal_power() -> None:
    """The comparator is the fixed plan's own MLE test sized for the same power (a probit curve in √n
    through the sizes it simulated, at the chosen design's other settings), not the amortised statistic
    at ±1.96; the saving is 1 − E[cost] / (its size × unit cost), with a bootstrap interval."""
    from types import SimpleNamespace

    from scipy import stats

    from cogtestbed.planning.kinds.sequential.seqfair import mle_equal_power, mle_power_curve

    def point(n: int, trials: int) -> SimpleNamespace:
        return SimpleNamespace(subjects=n, as_dict=lambda: {"subjects": n, "trials": trials, "runs": 1})

    a, b = -2.2, 0.6  # power(n) = Φ(a + b√n): 0.80 at n = ((z_.8 − a) / b)² ≈ 23.9
    sizes = [10, 16, 22, 28, 34]
    evaluated = [SimpleNamespace(point=point(n, 96), estimate=SimpleNamespace(
        hits=round(4000 * float(stats.norm.cdf(a + b * np.sqrt(n)))), sims=4000)) for n in sizes]
    evaluated.append(SimpleNamespace(point=point(12, 48), estimate=SimpleNamespace(hits=1, sims=100)))  # other trials
    curve = mle_power_curve(evaluated, point(22, 96), "subjects")
    assert curve is not None and list(curve[0]) == sizes
    stop = np.array([0, 1, 1, 2] * 50)
    costs = [5.0, 10.0, 15.0]
    out = mle_equal_power(curve, 0.8, stop, costs, unit_cost=1.0, seed=1)
    want_n = ((stats.norm.ppf(0.8) - a) / b) ** 2
    assert out["fixed_size"] == pytest.approx(want_n, rel=0.02)
    assert out["percent"] == pytest.approx(100 * (1 - 10.0 / out["fixed_size"]))
    assert out["interval"][0] < out["percent"] < out["interval"][1]
    assert out["fixed_size_interval"][0] < out["fixed_size"] < out["fixed_size_interval"][1]
    assert mle_equal_power(curve, 0.8, stop, costs, unit_cost=1.0, seed=1) == out  # seeded
    assert mle_power_curve(evaluated[:1], point(10, 96), "subjects") is None  # one size: no curve
