"""How many people a predictor saves: prediction-powered plans (``cogtestbed plan --mix``).

A population mean of a per-person estimand (one parameter of a cognitive model, each person's MLE) is
estimated from ``n`` people (labelled units) and ``N`` units the predictor alone predicts (unlabelled
units); the prediction-powered estimate (Angelopoulos et al. 2023; PPI++ with its power-tuning
``lam``) corrects the predictions' bias with the labelled people and keeps its coverage however poor the
predictor.  How much it saves grows with the *PPI correlation* ρ between a person's estimand and its
prediction, measured here on a pilot of paired units (people whose estimand and prediction are both
known): the cheapest (n, N) with the interval of ``n0`` people alone is Broska, Howes & van Loon's
(:func:`ppi_py.ppi_mean_power`).  The estimators and their power are ``ppi_py``'s (imported when a plan
runs).

Predictors (:func:`predictions`):

``model``   the fitted model's point prediction of each person's estimand from the first part of the
            person's own session (``--short-share`` of their trials, default half): a short session that
            costs that share of the fee; the labelled people's full sessions contain it.
``agent``   a random-parameter agent: the parameter drawn uniformly over the model's search range for each
            unit, independent of the person (a poor predictor: ρ ≈ 0, the plan keeps the people).
``llm``     an LLM continuing each person's short session (:mod:`cogtestbed.planning.kinds.mix.mix_llm`),
            its calls counted, bounded and priced from the price table.
``PATH``    a table of predictions (CSV or Parquet with columns ``subject`` and ``prediction``), e.g. an
            LLM's fitted parameter on each person's trials.

The estimand is a parameter of the model (each person's MLE) or a per-person metric of the experiment
(:func:`person_values`).  The plan never keeps fewer people than Cochran's rule allows a normal interval of
the estimand's mean (:func:`min_people`).

Assumptions (docs/mix.md): units exchangeable, the labelled people drawn at random from the population
the unlabelled units come from, and a predictor fixed before the labelled people are seen.  A predictor
trained on the labelled people breaks the guarantee; :func:`check_pairs` refuses predictions that
reproduce the people's own estimates.

Where ppi_py does not fit: its power analysis sizes a precision (an effective sample size), not a
test's power; it plans with the pilot's ρ as if known (the plan also reports the design at the lower
95 % bound of ρ); and a prediction priced at nothing gives it an unbounded N (a simulated or tabled
prediction is priced at ``--predictor-cost``, default :data:`DEFAULT_PREDICTION_COST`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.errors import InputError

#: Dollars a simulated or tabled prediction costs where ``--predictor-cost`` is not given (a nominal
#: cent: ppi_py's power analysis needs a positive price to bound the predicted units).
DEFAULT_PREDICTION_COST = 0.01
#: Fewest paired pilot units a correlation is measured on.
MIN_PAIRS = 10
#: The predictors that are no file.
NAMED_PREDICTORS = ("model", "agent", "llm")
#: Cochran's rule for a normal interval of a mean: at least ``CLT_FACTOR * skewness**2`` units (Cochran 1977,
#: *Sampling Techniques*, sec. 2.15; ppi_py's intervals are normal ones, and so is people alone).
CLT_FACTOR = 25.0


def person_estimates(model: Any, table: pd.DataFrame, estimand: str) -> pd.Series:
    """Each person's MLE of ``estimand`` (a parameter of ``model``) on ``table``, indexed by subject;
    persons whose fit failed are dropped."""
    if estimand not in model.parameters.names:
        raise InputError(f"`estimand` {estimand!r} is no parameter of {model.name}: choose one of "
                         f"{', '.join(model.parameters.names)}")
    fits = model.fit_mle(table)
    values = pd.Series(fits[estimand].to_numpy(float), index=fits["subject"].to_numpy(), name=estimand)
    return values[np.isfinite(values)].sort_index()


def person_metrics(exp: Any, table: pd.DataFrame, estimand: str) -> pd.Series:
    """Each person's value of the experiment's per-subject metric ``estimand`` (``p_risky``, ...) on ``table``,
    indexed by subject; persons whose metric is not finite are dropped."""
    rows = pd.DataFrame(exp.metrics(table)["per_subject"])
    if estimand not in rows.columns or estimand in ("subject", "n_trials", "n_invalid"):
        names = [c for c in rows.columns if c not in ("subject", "n_trials", "n_invalid")]
        raise InputError(f"`estimand` {estimand!r} is neither a parameter of the model nor a per-person metric of "
                         f"{exp.name}: its metrics are {', '.join(names)}")
    values = pd.Series(pd.to_numeric(rows[estimand], errors="coerce").to_numpy(float),
                       index=rows["subject"].to_numpy(), name=estimand)
    return values[np.isfinite(values)].sort_index()


def person_values(exp: Any, model: Any, table: pd.DataFrame, estimand: str) -> pd.Series:
    """Each person's estimand: the MLE of a parameter of ``model`` (:func:`person_estimates`), else the
    experiment's per-person metric of that name (:func:`person_metrics`)."""
    if estimand in model.parameters.names:
        return person_estimates(model, table, estimand)
    return person_metrics(exp, table, estimand)


def short_sessions(table: pd.DataFrame, share: float) -> pd.DataFrame:
    """Each subject's first ``share`` of trials (session, then trial order; at least one trial)."""
    if not 0.0 < share < 1.0:
        raise InputError(f"`short_share` must lie strictly between 0 and 1 (1 would predict each person with "
                         f"their own labelled session), got {share:g}")
    ordered = table.sort_values(["subject", "session", "trial"], kind="stable")
    rank = ordered.groupby("subject").cumcount()
    size = ordered.groupby("subject")["trial"].transform("size")
    return ordered[rank < np.maximum(1, np.floor(share * size))]


def agent_predictions(model: Any, subjects: Any, estimand: str, seed: int) -> pd.Series:
    """A random-parameter agent's ``estimand`` for each of ``subjects``: uniform over the parameter's
    search range, from a Generator seeded by ``seed`` (independent of the persons)."""
    param = next(p for p in model.parameters if p.name == estimand)
    low, high = param.search_bounds()
    lo, hi = (param.from_search(low), param.from_search(high)) if param.transform == "log" else (low, high)
    rng = np.random.default_rng(seed)
    index = np.sort(np.asarray(list(subjects)))
    return pd.Series(rng.uniform(lo, hi, size=index.size), index=index, name="prediction")


def table_predictions(path: str | Path) -> pd.Series:
    """A table of predictions (CSV or Parquet, columns ``subject`` and ``prediction``) as a Series by subject."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"`predictor` {path} is neither model, agent nor a file")
    frame = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    missing = {"subject", "prediction"} - set(frame.columns)
    if missing:
        raise InputError(f"the predictions table {path} lacks the column(s) {', '.join(sorted(missing))}")
    if frame["subject"].duplicated().any():
        raise InputError(f"the predictions table {path} has a subject twice: one prediction per unit")
    values = pd.to_numeric(frame["prediction"], errors="coerce").to_numpy(float)
    return pd.Series(values, index=frame["subject"].to_numpy(), name="prediction").sort_index()


def predictions(predictor: str, model: Any, table: pd.DataFrame, estimand: str, seed: int,
                short_share: float = 0.5, exp: Any = None) -> pd.Series:
    """The predictor's prediction of each person's ``estimand`` (module docstring: ``model``, ``agent``, a file;
    for a metric of ``exp``, ``model`` is the metric of the short session)."""
    metric = estimand not in model.parameters.names
    if predictor == "model":
        short = short_sessions(table, short_share)
        values = person_metrics(exp, short, estimand) if metric else person_estimates(model, short, estimand)
        return values.rename("prediction")
    if predictor == "agent":
        if metric:
            raise InputError(f"the random-parameter agent predicts a parameter of {model.name}, not the metric "
                             f"{estimand!r}: use model or a table of predictions")
        return agent_predictions(model, table["subject"].unique(), estimand, seed)
    return table_predictions(predictor)


def check_pairs(labels: pd.Series, predicted: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """The paired pilot (labels, predictions) on the units both have, in subject order; refused where
    fewer than :data:`MIN_PAIRS` pair, a value is not finite, or the predictions reproduce the labels (a
    predictor fit on the labelled people: PPI's guarantee needs one fixed before they are seen)."""
    both = labels.index.intersection(predicted.index).sort_values()
    y, yhat = labels.loc[both].to_numpy(float), predicted.loc[both].to_numpy(float)
    keep = np.isfinite(y) & np.isfinite(yhat)
    if int(keep.sum()) < MIN_PAIRS:
        raise InputError(f"the pilot pairs {int(keep.sum())} units with both a person's estimate and a prediction: "
                         f"at least {MIN_PAIRS} are needed to measure the correlation")
    y, yhat = y[keep], yhat[keep]
    if np.allclose(y, yhat, rtol=1e-9, atol=1e-12):
        raise InputError("the predictions equal the people's own estimates: a predictor fit on the labelled people "
                         "breaks prediction-powered inference (predict each unit without its labels)")
    if np.std(yhat) == 0.0:
        raise InputError("the predictions are all equal: they carry no information about the people")
    return y, yhat


def min_people(labels: np.ndarray) -> int:
    """Fewest labelled people whose mean a normal interval covers at its level: Cochran's rule, ``CLT_FACTOR``
    times the squared (bias-corrected) skewness of the people's estimand (:data:`MIN_PAIRS` at least).  A skewed
    estimand (λ's MLE piles up at its bound) undercovers below it, with predictions and without."""
    from scipy.stats import skew

    g1 = float(skew(np.asarray(labels, float), bias=False))
    return max(MIN_PAIRS, math.ceil(CLT_FACTOR * g1**2)) if np.isfinite(g1) else MIN_PAIRS


def check_labelled(n: int, minimum: int, what: str = "") -> None:
    """Refuse ``n`` labelled people below Cochran's ``minimum`` (:func:`min_people`) in one line."""
    if n < minimum:
        raise InputError(f"{n} labelled people{what} are too few for a normal interval of this estimand's mean: "
                         f"its skewness needs at least {minimum} (Cochran's rule, 25 x skewness^2)")


def with_min_people(design: dict[str, Any], rho: float, n0: int, fee: float, unit_cost: float, nested: bool,
                    minimum: int) -> dict[str, Any]:
    """``design`` (a :func:`cheapest_mix`) with at least ``minimum`` people: the predicted units the
    effective size ``n0`` then needs (Broska et al.'s n_eff solved for N), none where ``minimum`` people alone
    reach it."""
    if design["people"] >= minimum:
        return design
    n, r2 = minimum, min(rho**2, 1 - 1e-9)
    if n >= n0 or n <= (1 - r2) * n0:  # people alone are enough, or predictions cannot reach n0 from n people
        n = max(n, n0)
        return {"people": n, "predicted": 0, "effective_n": n, "dollars": round(n * fee, 2)}
    big_n = math.ceil(n * (n0 - n) / (n - (1 - r2) * n0))
    dollars = n * fee + (n + big_n) * unit_cost if not nested else n * fee + big_n * unit_cost
    return {"people": n, "predicted": big_n, "effective_n": n0, "dollars": round(dollars, 2)}


def people_only_n(labels: np.ndarray, halfwidth: float, level: float) -> int:
    """People a classical (normal) interval of the mean needs for ``halfwidth`` at ``1 - level``."""
    from scipy.stats import norm

    sd = float(np.std(labels, ddof=1))
    return max(2, math.ceil((norm.ppf(1 - level / 2) * sd / halfwidth) ** 2))


def ppi_correlation(labels: np.ndarray, predicted: np.ndarray) -> float:
    """ppi_py's PPI correlation of the pilot (Pearson's r, capped below 1 by 1/n as ppi_py caps it)."""
    from cogtestbed.shims.ppi_shim import ppi_correlation as shim_correlation

    return shim_correlation(labels, predicted)


def correlation_bounds(rho: float, pairs: int, level: float = 0.05) -> tuple[float, float]:
    """Fisher-z interval of a correlation measured on ``pairs`` units."""
    from scipy.stats import norm

    half = norm.ppf(1 - level / 2) / math.sqrt(max(pairs - 3, 1))
    z = math.atanh(min(max(rho, -0.999999), 0.999999))
    return math.tanh(z - half), math.tanh(z + half)


def cheapest_mix(rho: float, n0: int, fee: float, unit_cost: float, nested: bool) -> dict[str, Any]:
    """ppi_py's cheapest (n people, N predicted units) whose PPI interval matches ``n0`` people's
    (:func:`ppi_py.ppi_power` at ``effective_n=n0``; the people-only design where no mix is cheaper).

    ``nested``: the predictor's input is the first part of a person's session (the model's short
    session), priced ``unit_cost`` as ppi_py's covariate X that labelled and predicted units both need, the
    rest of a person's session (``fee - unit_cost``) as the label and the prediction itself as free
    compute; otherwise each prediction (of a labelled person or of a predicted unit) costs ``unit_cost``
    and a person ``fee``."""
    from ppi_py import ppi_power

    if not unit_cost > 0:
        raise InputError(f"a predicted unit must cost more than 0 dollars, got {unit_cost:g}: set `predictor_cost`")
    if nested and not unit_cost < fee:
        raise InputError(f"a short session ({unit_cost:g}) costs at least a person's fee ({fee:g}): nothing to save")
    cost_x, cost_y, cost_yhat = (unit_cost, fee - unit_cost, 0.0) if nested else (0.0, fee, unit_cost)
    r = min(abs(rho), 1 - 1e-9)
    out = ppi_power(r, cost_X=cost_x, cost_Y=cost_y, cost_Yhat=cost_yhat, effective_n=n0)
    if int(out["N"]) <= 0:  # no mix is cheaper: people alone, without predicting them
        return {"people": n0, "predicted": 0, "effective_n": n0, "dollars": round(n0 * fee, 2)}
    return {"people": int(out["n"]), "predicted": max(int(out["N"]), 0), "effective_n": int(out["effective_n"]),
            "dollars": round(float(out["cost"]), 2)}


def plan_mix(labels: pd.Series, predicted: pd.Series, halfwidth: float, fee: float, unit_cost: float,
             level: float = 0.05, nested: bool = False) -> dict[str, Any]:
    """The mixed and the people-only designs for a ``halfwidth`` interval of the population mean at
    ``1 - level``: the pilot's PPI correlation (:func:`ppi_correlation`, with its Fisher-z bounds), the
    people-only size (:func:`people_only_n`) and dollars at ``fee`` a person, and the cheapest mix
    (:func:`cheapest_mix`) at the measured correlation and at its lower bound (a cautious plan)."""
    if not halfwidth > 0 or not fee > 0:
        raise InputError(f"`precision` and `fee` must be positive, got {halfwidth:g} and {fee:g}")
    y, yhat = check_pairs(labels, predicted)
    rho = ppi_correlation(y, yhat)
    low, high = correlation_bounds(rho, y.size, level)
    minimum = min_people(y)
    n0 = max(people_only_n(y, halfwidth, level), minimum)
    mixed = with_min_people(cheapest_mix(rho, n0, fee, unit_cost, nested), rho, n0, fee, unit_cost, nested, minimum)
    cautious = with_min_people(cheapest_mix(max(low, 0.0), n0, fee, unit_cost, nested), max(low, 0.0), n0, fee,
                               unit_cost, nested, minimum)
    people = {"people": n0, "predicted": 0, "dollars": round(n0 * fee, 2)}
    return {"pilot": {"pairs": int(y.size), "mean": float(np.mean(y)), "sd": float(np.std(y, ddof=1)),
                      "ppi_corr": rho, "ppi_corr_bounds": [low, high], "min_people": minimum},
            "halfwidth": halfwidth, "level": level, "fee": fee, "predicted_unit_cost": unit_cost,
            "people_only": people, "mixed": mixed, "mixed_at_lower_corr": cautious,
            "people_saved": n0 - mixed["people"], "dollars_saved": round(people["dollars"] - mixed["dollars"], 2)}


def ppi_interval(labels: np.ndarray, predicted: np.ndarray, unlabelled: np.ndarray,
                 level: float = 0.05) -> tuple[float, float]:
    """ppi_py's PPI++ interval of the mean (:func:`ppi_py.ppi_mean_ci`, power-tuned) at ``1 - level``."""
    from ppi_py import ppi_mean_ci

    low, high = ppi_mean_ci(np.asarray(labels, float), np.asarray(predicted, float), np.asarray(unlabelled, float),
                            alpha=level)
    return float(np.ravel(low)[0]), float(np.ravel(high)[0])


def classical_interval(labels: np.ndarray, level: float = 0.05) -> tuple[float, float]:
    """ppi_py's classical (normal) interval of the mean of the labels alone."""
    from ppi_py import classical_mean_ci

    low, high = classical_mean_ci(np.asarray(labels, float), alpha=level)
    return float(np.ravel(low)[0]), float(np.ravel(high)[0])


def predicted_effective_n(rho: float, n: int, big_n: int) -> float:
    """Broska et al.'s effective sample size of n labelled and N unlabelled units at PPI correlation ρ."""
    return n * (n + big_n) / (n + (1 - rho**2) * big_n)


def mix_lines(payload: Mapping[str, Any], size_name: str = "people") -> list[str]:
    """A mix plan as text: the pilot's correlation, then the people-only and the mixed designs."""
    pilot, people, mixed, cautious = (payload["pilot"], payload["people_only"], payload["mixed"],
                                      payload["mixed_at_lower_corr"])
    low, high = pilot["ppi_corr_bounds"]
    est = payload["estimand"]
    return [
        f"mix plan: population mean of {est} within +-{payload['halfwidth']:g} at {1 - payload['level']:.0%} "
        f"(predictor {payload['predictor']}, {payload['source']})",
        f"pilot: {pilot['pairs']} paired people, mean {est} {pilot['mean']:.4g}, SD {pilot['sd']:.4g}; "
        f"PPI correlation {pilot['ppi_corr']:.3f} (95% {low:.3f} to {high:.3f}); at least {pilot['min_people']:,} "
        "people for a normal interval (Cochran's rule)",
        f"people only : {people['people']:,} people, ${people['dollars']:,.2f} (fee ${payload['fee']:g})",
        f"mixed       : {mixed['people']:,} people + {mixed['predicted']:,} predicted units "
        f"(${payload['predicted_unit_cost']:g} each), ${mixed['dollars']:,.2f}",
        f"  at the correlation's lower bound: {cautious['people']:,} people + {cautious['predicted']:,} predicted, "
        f"${cautious['dollars']:,.2f}",
        f"saves {payload['people_saved']:,} people and ${payload['dollars_saved']:,.2f}",
        *_llm_lines(payload.get("llm_calls")),
    ]


def _llm_lines(calls: Mapping[str, Any] | None) -> list[str]:
    if calls is None:
        return []
    tokens = f"{calls['prompt_tokens']:,} prompt tokens ({'exact' if calls['exact_tokens'] else 'estimated'})"
    dollars = "unpriced" if calls["dollars"] is None else \
        f"${calls['dollars']:,.4f} (${calls['per_unit']:,.4f} a person) from the price table"
    return [f"llm predictor {calls['spec']}: {calls['calls']:,} calls, {tokens}, {dollars}"]


__all__ = ["CLT_FACTOR", "DEFAULT_PREDICTION_COST", "MIN_PAIRS", "agent_predictions", "cheapest_mix", "check_labelled",
           "check_mix", "check_pairs", "classical_interval", "correlation_bounds", "min_people", "mix_lines",
           "people_only_n", "person_estimates", "person_metrics", "person_values", "plan_mix", "ppi_correlation",
           "ppi_interval", "predicted_effective_n", "predictions", "run_mix", "short_sessions", "table_predictions",
           "with_min_people"]


def _llm_predicted(exp: Any, model: Any, table: pd.DataFrame, req: Any, ctx: Any) -> tuple[pd.Series, dict[str, Any]]:
    """The llm predictor (:mod:`cogtestbed.planning.kinds.mix.mix_llm`): its client (``llm_base_url``) and price."""
    from cogtestbed.llm_adapters.clients.backends import make_client
    from cogtestbed.llm_adapters.clients.prices import PriceTable, require_price
    from cogtestbed.planning.kinds.mix.mix_llm import llm_predictions

    mx, spec = req.mixed, _llm_spec(req)
    assert spec is not None
    prices = req.llms.prices
    price = require_price(PriceTable(Path(prices) if prices else None), spec, req.llms.allow_unpriced)
    client = make_client(spec, base_url=mx.llm_base_url, mode="completions")
    if ctx.say:
        ctx.say(f"{spec} continues each person's short session")
    answered, cost = llm_predictions(table, str(req.people.human), short_sessions(table, mx.short_share),
                                     client=client, price=price, short_share=mx.short_share, trials=mx.llm_trials,
                                     max_calls=mx.llm_max_calls, max_cost=req.llms.max_cost)
    return person_values(exp, model, answered, str(mx.estimand)).rename("prediction"), cost


def _predicted_unit_cost(req: Any, fee: float) -> float:
    mx = req.mixed
    if mx.predictor_cost is not None:
        return float(mx.predictor_cost)
    return fee * mx.short_share if mx.predictor == "model" else DEFAULT_PREDICTION_COST


def check_mix(exp: Any, req: Any) -> None:
    """The ``mix`` kind's refusals from the request alone: its required options, the estimand a parameter of the
    model and the precision target on the estimand."""
    from cogtestbed.planning.sizes import Effect

    mx, tg = req.mixed, req.target
    missing = [f"`{name}`" for name, given in (("model", tg.model), ("estimand", mx.estimand),
                                               ("predictor", mx.predictor), ("human", req.people.human),
                                               ("precision", tg.precision)) if given is None]
    if missing:
        raise InputError(f"a mix plan needs {', '.join(missing)}")
    target = Effect.of(tg.precision, "precision")
    assert target is not None
    if target.name != mx.estimand:
        raise InputError(f"`precision` names {target.name!r}, the mix plan's `estimand` is {mx.estimand!r}: "
                         "plan the interval of the estimand")
    if not 0.0 < mx.short_share < 1.0:
        raise InputError(f"`short_share` must lie strictly between 0 and 1, got {mx.short_share:g}")
    if mx.predictor not in NAMED_PREDICTORS and not Path(mx.predictor).exists():
        raise InputError(f"`predictor` {mx.predictor} is neither model, agent, llm nor a file")
    _check_llm(req)


def _llm_spec(req: Any) -> str | None:
    llm = req.llms.llm
    specs = [llm] if isinstance(llm, str) else list(llm or [])
    if len(specs) > 1:
        raise InputError("a mix plan's llm predictor is one `llm`, got " + ", ".join(specs))
    return specs[0] if specs else None


def _check_llm(req: Any) -> None:
    """The llm predictor's refusals: it needs one `llm`; `llm` and the llm options need it."""
    mx, spec = req.mixed, _llm_spec(req)
    if mx.predictor == "llm" and spec is None:
        raise InputError("the llm predictor needs `llm` (BACKEND:MODEL, with `llm_base_url` for a local server)")
    options = (("llm", spec), ("llm_trials", mx.llm_trials), ("llm_base_url", mx.llm_base_url),
               ("llm_max_calls", mx.llm_max_calls))
    given = [name for name, value in options if value is not None]
    if mx.predictor != "llm" and given:
        raise InputError(f"`{given[0]}` is for the llm predictor (`predictor` llm), not {mx.predictor}")


def run_mix(exp: Any, req: Any, ctx: Any) -> Any:
    """The ``mix`` plan kind: the people's per-person estimates (``human``), the predictor's predictions of the
    same people (:func:`predictions`) and :func:`plan_mix` at the ``precision`` half-width."""
    from cogtestbed.planning.kinds import Planned
    from cogtestbed.planning.sizes import Effect

    mx = req.mixed
    target = Effect.of(req.target.precision, "precision")
    assert target is not None and mx.estimand is not None and mx.predictor is not None
    model = exp.model(req.target.model)
    if ctx.say:
        what = f"fitting {model.name} to" if mx.estimand in model.parameters.names else f"{mx.estimand} of"
        ctx.say(f"{what} each person of {req.people.human}")
    table, _ = ctx.read_table(exp, req.people.human, "auto", None)
    labels = person_values(exp, model, table, mx.estimand)
    fee, calls = float(mx.fee), None
    if mx.predictor == "llm":
        predicted, calls = _llm_predicted(exp, model, table, req, ctx)
        unit_cost = fee * mx.short_share + (calls["per_unit"] or 0.0) if mx.predictor_cost is None \
            else float(mx.predictor_cost)
    else:
        predicted = predictions(mx.predictor, model, table, mx.estimand, req.seed, mx.short_share, exp)
        unit_cost = _predicted_unit_cost(req, fee)
    payload = plan_mix(labels, predicted, target.size, fee, unit_cost, level=req.target.level,
                       nested=mx.predictor in ("model", "llm"))
    if calls is not None:
        payload["llm_calls"] = calls
    payload.update(estimand=mx.estimand, predictor=mx.predictor, model=model.name, source=str(req.people.human),
                   assumes="units exchangeable; the labelled people drawn at random from the population the "
                           "predicted units come from; the predictor fixed before the labelled people are seen")
    return Planned(payload, "people")

