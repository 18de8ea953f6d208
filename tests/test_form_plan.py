"""Planning prompt forms × subjects (issue 42)."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from cogtestbed.environments.forms import FormDesign, FormError
from cogtestbed.planning.kinds.forms.form_plan import (
    EffectScales,
    forms_power,
    naive_subjects,
    pilot_scales,
    plan_forms,
    plan_forms_study,
)
from cogtestbed.studies.form_studies import form_study_spec


@pytest.mark.parametrize(("k", "n"), [(4, 10), (3, 50), (8, 5)])
def test_power_is_the_noncentral_t(k: int, n: int) -> None:
    lam = 0.2 / math.sqrt((0.05**2 + 0.23**2 / n) / k)
    crit = stats.t.ppf(0.975, k - 1)
    ref = stats.nct.sf(crit, k - 1, lam) + stats.nct.cdf(-crit, k - 1, lam)
    assert abs(forms_power(0.2, 0.23, 0.05, k, n) - ref) < 1e-4
    assert forms_power(0.2, 0.23, 0.05, 1, n) is None
    assert forms_power(0.0, 0.23, 0.05, k, n) == pytest.approx(0.05, abs=1e-3)


def test_plan_chooses_the_cheapest_and_says_one_form_cannot() -> None:
    scales = EffectScales(0.23, 0.036, "given")
    plan = plan_forms(0.2, scales, (1, 2, 4, 8), 0.8, 0.05, dollars_per_subject=0.5)
    by_k = {r["forms"]: r for r in plan["designs"]}
    assert by_k[2]["subjects"] is None and by_k[2]["power_at_most_subjects"] < 0.8  # capped by tau
    for r in (by_k[4], by_k[8]):
        n = r["subjects_per_form"]
        assert r["power"] >= 0.8 and (n == 2 or forms_power(0.2, 0.23, 0.036, r["forms"], n - 1) < 0.8)
        assert r["dollars"] == pytest.approx(r["subjects"] * 0.5)
    assert plan["chosen"]["dollars"] == min(by_k[4]["dollars"], by_k[8]["dollars"])
    assert plan["one_form"]["reachable"] is False
    assert plan["one_form"]["naive_subjects"] == naive_subjects(0.2, 0.23, 0.8)


def test_pilot_scales_from_a_table_across_forms() -> None:
    from cogtestbed.simulation import simulate

    forms = FormDesign(tuple(range(4)), {"alpha_pos": 1.0})
    spec = form_study_spec("instrumental-learning", "rw-pm", forms, 40, {"alpha_pos": 0.5, "alpha_neg": 0.5},
                           ("optimism_bias", 0.2))
    table = simulate("instrumental-learning", "rw-pm", 40, 3, spec.params, forms=forms)
    scales = pilot_scales(spec, table)
    assert scales.tau >= 0 and 0.05 < scales.sigma < 1 and scales.source.startswith("pilot")
    lo, hi = scales.tau_interval
    assert lo <= scales.tau < hi and hi > 0 and scales.level == 0.95
    assert scales.as_json()["tau_interval"] == [lo, hi]
    with pytest.raises(ValueError, match="no 'form' column"):
        pilot_scales(spec, table.drop(columns="form"))


def test_plan_refuses_bad_grids() -> None:
    with pytest.raises(FormError, match="counts of forms"):
        plan_forms_study("instrumental-learning", "rw-pm", ("optimism_bias", 0.2), (1, 16), {"alpha_pos": 0.1})
    with pytest.raises(FormError, match="`form_sd`"):
        plan_forms_study("instrumental-learning", "rw-pm", ("optimism_bias", 0.2), (2, 4), {})


def test_plan_with_a_pilot_across_forms_says_the_form_sd_and_its_interval(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``plan --forms 1,2,4,8 --pilot TABLE``: τ and σ come from the pilot (no --form-sd needed), the
    printed τ carries its F interval, and each design's power if τ is at its upper bound,
    which is never above the power at the estimate."""
    import json

    from typer.testing import CliRunner

    from cogtestbed.cli import app
    from cogtestbed.simulation import simulate

    forms = FormDesign(tuple(range(8)), {"alpha_pos": 0.5})
    table = simulate("instrumental-learning", "rw-pm", 32, 5, {"alpha_pos": 0.5, "alpha_neg": 0.5, "beta": 5.0},
                     forms=forms)
    path = tmp_path / "pilot.parquet"
    table.to_parquet(path)
    args = ["plan", "instrumental-learning", "--model", "rw-pm", "--effect", "optimism_bias=0.2", "--forms", "1,2,4,8",
            "--pilot", str(path), "--base", "alpha_pos=0.5", "--base", "alpha_neg=0.5"]
    res = CliRunner().invoke(app, [*args, "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    sc = out["scales"]
    assert sc["source"].startswith("pilot: 8 forms × 32 subjects")
    assert sc["tau_interval"][0] <= sc["tau"] <= sc["tau_interval"][1] and sc["level"] == 0.95
    for row in out["designs"]:
        if row["subjects"] is not None:
            assert row["power_at_tau_high"] <= row["power"] + 1e-12
    text = CliRunner().invoke(app, args)
    flat = " ".join(text.output.split())
    assert text.exit_code == 0 and f"[{sc['tau_interval'][0]:.3g}, " in flat and "(95% F interval)" in flat
    assert "pilot: 8 forms" in flat and "upper bound" in flat


def test_pilot_problems_say_when_a_pilot_does_not_identify_the_form_sd() -> None:
    """Estimates at a bound in half the pilot or more, or τ = 0, make the pilot's τ no estimate."""
    import pandas as pd

    from cogtestbed.planning.kinds.forms.form_plan import pilot_problems
    from cogtestbed.registry import get_experiment

    model = get_experiment("instrumental-learning").model("rw-pm")
    spec = form_study_spec("instrumental-learning", "rw-pm", FormDesign(tuple(range(4)), {}), 8,
                           {"alpha_pos": 0.5, "alpha_neg": 0.5}, ("optimism_bias", 0.2))
    inside = pd.DataFrame({"alpha_pos": [0.3, 0.5, 0.6, 0.4], "alpha_neg": [0.4, 0.5, 0.3, 0.6]})
    assert pilot_problems(spec, inside, model, 0.2, (0.0, 0.5)) == ()
    stuck = inside.assign(alpha_neg=[0.0, 0.0, 0.3, 0.6])  # 2 of 4 at the lower bound
    (problem,) = pilot_problems(spec, stuck, model, 0.2, (0.0, 0.5))
    assert problem.startswith("2 of 4 pilot subjects have an estimate of alpha_pos or alpha_neg at a bound")
    assert pilot_problems(spec, inside.assign(alpha_neg=[0.0, 0.5, 0.3, 0.6]), model, 0.2, (0.0, 0.5)) == ()  # 1 of 4
    (zero,) = pilot_problems(spec, inside, model, 0.0, (0.0, 0.31))
    assert zero.startswith("τ = 0 (upper end 0.31)")
    # optimism bias = α⁺ − α⁻ lies in [-1, 1]: no SD above 1; [0, 1.2] holds them all, [0.05, 1.2] does not
    (everything,) = pilot_problems(spec, inside, model, 0.3, (0.0, 1.2))
    assert everything.startswith("τ's interval [0, 1.2] holds every SD the effect can have (at most 1,")
    assert pilot_problems(spec, inside, model, 0.3, (0.05, 1.2)) == ()
    scales = EffectScales(0.2, 0.0, "pilot", (0.0, 0.31), problems=(zero,))
    assert not scales.identified and scales.as_json()["problems"] == [zero]
    assert EffectScales(0.2, 0.1, "pilot", (0.0, 0.3)).as_json()["identified"] is True


def test_plan_warns_when_its_pilot_does_not_identify_the_form_sd(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A pilot of 3 forms × 4 sessions of 8 trials: τ's interval holds every SD the optimism bias can
    have, so ``plan --forms --pilot`` marks τ unidentified in --json and prints a WARNING line."""
    import json

    from typer.testing import CliRunner

    from cogtestbed.cli import app
    from cogtestbed.registry import get_experiment
    from cogtestbed.simulation import simulate

    exp = get_experiment("instrumental-learning")
    table = simulate(exp, "rw-pm", 12, 3, {"alpha_pos": 0.5, "alpha_neg": 0.5, "beta": 5.0},
                     design=exp.design_cls(visits_per_casino=2), forms=FormDesign(tuple(range(3)), {"alpha_pos": 0.15}))
    path = tmp_path / "pilot.parquet"
    table.to_parquet(path)
    args = ["plan", "instrumental-learning", "--model", "rw-pm", "--effect", "optimism_bias=0.4", "--forms", "1,2,4",
            "--pilot", str(path)]
    res = CliRunner().invoke(app, [*args, "--json"])
    assert res.exit_code == 0, res.output
    sc = json.loads(res.output)["scales"]
    assert sc["identified"] is False and sc["tau_interval"][0] == 0.0 and sc["tau_interval"][1] > 1.0
    assert any("holds every SD the effect can have" in p for p in sc["problems"])
    text = CliRunner().invoke(app, args)
    assert text.exit_code == 0 and "WARNING: the pilot does not identify τ" in " ".join(text.output.split())


def test_a_simulated_forms_plan_computes_its_power_at_the_effect_the_test_sees(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The per-subject MLE of RW±'s optimism bias is shrunk toward 0 (0.2 asked, about 0.17 estimated at 96
    trials): a simulated forms plan computes its power at the simulated estimates' mean, not at the asked δ,
    and says both."""
    from cogtestbed.planning.kinds.forms import form_plan
    from cogtestbed.planning.plan_text import forms_lines

    scales = form_plan.EffectScales(0.233, 0.0359, "simulated", estimand=0.17, estimand_mc_se=0.01)
    monkeypatch.setattr(form_plan, "simulated_scales", lambda spec, seed: scales)
    out = form_plan.plan_forms_study("instrumental-learning", "rw-pm", ("optimism_bias", 0.2), [4, 8],
                                     {"alpha_pos": 0.15}, params={"alpha_pos": 0.5, "alpha_neg": 0.5})
    assert out["effect"] == 0.2 and out["power_at"] == 0.17
    chosen = out["chosen"]
    k, n = chosen["forms"], chosen["subjects_per_form"]
    assert chosen["power"] == form_plan.forms_power(0.17, 0.233, 0.0359, k, n)
    at_asked = form_plan.plan_forms(0.2, scales, [4, 8])["chosen"]
    assert chosen["subjects"] > at_asked["subjects"]  # a smaller effect needs more subjects
    assert out["scales"]["estimand"] == 0.17
    text = "\n".join(forms_lines({**out, "effect_name": "optimism_bias"}, "subjects"))
    assert "the simulated estimates' mean 0.17" in text and "not the asked 0.2" in text


def test_a_simulated_forms_plan_prints_its_power_from_fresh_subjects_with_its_mc_se(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The subjects whose σ and estimand choose forms × subjects do not report its power: the printed power is
    the formula's at a second, fresh set of subjects' σ and estimand (seed + FRESH_OFFSET), with the MC SE
    those 600 fits carry (about 0.04 in power at an estimand SE of 0.01)."""
    from cogtestbed.planning.kinds.forms import form_plan
    from cogtestbed.planning.plan_text import forms_lines

    by_seed = {3: form_plan.EffectScales(0.25, 0.0359, "simulated", estimand=0.146, estimand_mc_se=0.0104),
               3 + form_plan.FRESH_OFFSET: form_plan.EffectScales(0.26, 0.0359, "simulated", estimand=0.175,
                                                                  estimand_mc_se=0.0107)}
    monkeypatch.setattr(form_plan, "simulated_scales", lambda spec, seed: by_seed[seed])
    out = form_plan.plan_forms_study("instrumental-learning", "rw-pm", ("optimism_bias", 0.2), [4, 8],
                                     {"alpha_pos": 0.15}, params={"alpha_pos": 0.5, "alpha_neg": 0.5}, seed=3)
    chosen = out["chosen"]
    k, n = chosen["forms"], chosen["subjects_per_form"]
    assert chosen["search_power"] == form_plan.forms_power(0.146, 0.25, 0.0359, k, n) >= 0.8
    assert chosen["power"] == form_plan.forms_power(0.175, 0.26, 0.0359, k, n) > chosen["search_power"]
    assert 0.01 < chosen["power_mc_se"] < 0.08 and out["power_at"] == 0.175
    assert out["search_scales"]["estimand"] == 0.146 and "fresh subjects" in out["scales"]["source"]
    text = "\n".join(forms_lines({**out, "effect_name": "optimism_bias"}, "subjects"))
    assert f"± {chosen['power_mc_se']:.2g}"[:5] in text
