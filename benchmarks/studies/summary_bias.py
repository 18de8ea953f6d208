"""Issue 68: the default summary against the truth, the flag share and the intervals' coverage.

For each population below, ``--reps`` simulated samples of ``--subjects`` subjects are fitted by
maximum likelihood (:meth:`~cogtestbed.inference.base.CognitiveModel.fit_identified`: every
fitted subject with its likelihood-ratio 95 % interval and its flag).  Per parameter it prints:

* the truth and the **default summary** over every fitted subject (what ``fit``'s summary and the
  recovery verdict report, :func:`~cogtestbed.inference.base.default_summary`: for a log-scale
  parameter the median, on the log scale, against the median of the true values; for another the
  mean against their mean) and its bias with the Monte-Carlo SE over reps;
* the all-subject mean's bias against the mean of the true values, and the pinned-only mean's
  (the identified-only summary before issue 68), each with its MC SE;
* ``ok``: the default summary is no further from its truth than the all-subject mean from its
  own (within 2 MC SE);
* the share of subjects flagged (the data cannot pin the parameter: failed fit, or an interval
  unbounded within the declared range) and the coverage of the reported 95 % intervals.

Populations: RW± at the power plan's population (medians α⁺ 0.4, α⁻ 0.2, β 5, SD 0.5 on the
unconstrained scale: ``plan instrumental-learning --model rw-pm --effect optimism_bias=0.2``) and at
``make demo``'s recovery (the hierarchical prior, a new population per rep), both 96 trials;
hyperbolic discounting on CogBench's staircase (median k = e^-3, SD 1 on log k; τ 0.05, SD 0.5);
prospect theory at Spektor et al.'s 98 trials (λ 1.5, α 0.8, θ 1, SD 0.5).  ``--spektor``: also the
flag share and the median λ, α, θ of Spektor et al.'s 282 participants (no truth, no coverage).

    python benchmarks/studies/summary_bias.py --reps 10 --subjects 50 [--spektor]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.inference.identification import FIT_FAILED, parameter_flag
from cogtestbed.registry import get_experiment
from cogtestbed.simulation import simulate
from cogtestbed.studies.model_studies import scatter
from cogtestbed.studies.study_data import SD_SCALE, sample_hierarchical_prior

SPEKTOR = Path(__file__).resolve().parents[3] / "shared/data/psych201/spektor2024lossaversion/prompts.jsonl.zip"

Drawer = Callable[[Any, int, np.random.Generator], dict[str, np.ndarray]]


def scattered(medians: dict[str, float], sds: dict[str, float]) -> Drawer:
    """Subjects scattered around ``medians`` by ``sds`` on each parameter's unconstrained scale."""
    def draw(model: Any, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {p.name: scatter(p, medians[p.name], sds[p.name], rng.normal(size=n)) for p in model.parameters}
    return draw


def prior(model: Any, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """``make demo``'s recovery: a new population from the hierarchical prior per rep."""
    return sample_hierarchical_prior(model.parameters, n, rng, SD_SCALE)[1]


CASES: dict[str, tuple[str, str, str, Drawer]] = {
    "RW± (power plan's population)": ("instrumental-learning", "rw-pm", "rw-pm",
                                      scattered({"alpha_pos": 0.4, "alpha_neg": 0.2, "beta": 5.0},
                                                {"alpha_pos": 0.5, "alpha_neg": 0.5, "beta": 0.5})),
    "RW± (make demo's recovery)": ("instrumental-learning", "rw-pm", "rw-pm", prior),
    "hyperbolic (temporal-discounting staircase)": ("temporal-discounting", "hyperbolic", "hyperbolic",
                                                    scattered({"k": float(np.exp(-3.0)), "temperature": 0.05},
                                                              {"k": 1.0, "temperature": 0.5})),
    "prospect theory (98 trials)": ("risky-choice", "prospect-theory", "prospect-theory",
                                    scattered({"lambda": 1.5, "alpha": 0.8, "theta": 1.0},
                                              {"lambda": 0.5, "alpha": 0.5, "theta": 0.5})),
}


def one_rep(experiment: str, model: Any, agent: str, true: dict[str, np.ndarray], n: int, seed: int) -> pd.DataFrame:
    """One sample: per (subject, parameter) the truth, estimate, interval and flag."""
    trials = simulate(experiment, agent, n, seed, params=true)
    fits = model.fit_identified(trials).set_index("subject")
    rows = []
    for p in model.parameters:
        for i, s in enumerate(sorted(fits.index)):
            f = fits.loc[s]
            failed = isinstance(f["null_reason"], str) and f["null_reason"].startswith(FIT_FAILED)
            unfitted = not np.isfinite(f[p.name])
            kind = ("fit failed" if failed or unfitted else
                    "unbounded interval" if parameter_flag(p, f[f"{p.name}_lo95"], f[f"{p.name}_hi95"]) else None)
            rows.append({"parameter": p.name, "log": p.transform == "log", "true": true[p.name][i],
                         "estimate": f[p.name], "lo": f[f"{p.name}_lo95"], "hi": f[f"{p.name}_hi95"],
                         "flagged": kind is not None, "kind": kind})
    return pd.DataFrame(rows)


def rep_summaries(g: pd.DataFrame) -> dict[str, float]:
    """One rep's summaries of one parameter (log scale for a log-scale parameter): the default
    summary (:func:`~cogtestbed.inference.base.default_summary`: the median of a log-scale
    parameter against the median of the truths, the mean of another against their mean)."""
    log = bool(g["log"].iloc[0])
    f = np.log if log else (lambda x: x)
    t, e = f(g["true"].to_numpy(float)), f(g["estimate"].to_numpy(float))
    ok = np.isfinite(e)
    pinned = ok & ~g["flagged"].to_numpy(bool)
    stat = np.median if log else np.mean
    return {"median_bias": float(stat(e[ok]) - stat(t)), "mean_bias": float(np.mean(e[ok]) - np.mean(t)),
            "pinned_bias": float(np.mean(e[pinned]) - np.mean(t)) if pinned.any() else np.nan,
            "truth": float(stat(t)), "median": float(stat(e[ok]))}


#: The contrast a plan of the model tests (its parameter of interest) and the parameters it is made of: a
#: subject's contrast is unpinned where either part is flagged.
PLANNED_CONTRAST = {"rw-pm": ("optimism_bias (alpha_pos - alpha_neg)", ("alpha_pos", "alpha_neg"))}


def contrast_flag_share(table: pd.DataFrame, parts: tuple[str, ...]) -> float:
    """The share of subjects with any of ``parts`` flagged."""
    sub = table[table["parameter"].isin(parts)]
    sub = sub.assign(s=sub.groupby(["rep", "parameter"]).cumcount())
    return float(sub.groupby(["rep", "s"])["flagged"].any().mean())


def report(name: str, table: pd.DataFrame, model_name: str = "") -> None:
    per_rep = table.groupby("rep")["parameter"].size().iloc[0] // table["parameter"].nunique()
    print(f"\n{name}: {table['rep'].nunique()} reps x {per_rep} subjects")
    print(f"  {'parameter (default)':<22}{'truth':>9}{'default summary':>18}{'bias ± MC SE':>20}{'mean bias ± SE':>20}"
          f"{'pinned-only mean bias':>24}{'ok':>5}{'flagged':>9}{'coverage':>10}")
    for p, g in table.groupby("parameter", sort=False):
        reps = pd.DataFrame([rep_summaries(r) for _, r in g.groupby("rep")])
        se = reps.std(ddof=1) / np.sqrt(len(reps)) if len(reps) > 1 else reps.std() * np.nan
        m = reps.mean()
        ok = abs(m["median_bias"]) <= abs(m["mean_bias"]) + 2 * max(se["median_bias"], se["mean_bias"])
        has = g["lo"].notna()
        cover = ((g["true"] >= g["lo"]) & (g["true"] <= g["hi"]))[has].mean()
        scale = "log " if bool(g["log"].iloc[0]) else ""
        p = f"{p} ({'median' if scale else 'mean'})"
        print(f"  {scale + str(p):<22}{m['truth']:>9.3f}{m['median']:>18.3f}"
              f"{m['median_bias']:>+12.3f} ± {se['median_bias']:.3f}{m['mean_bias']:>+12.3f} ± {se['mean_bias']:.3f}"
              f"{m['pinned_bias']:>+16.3f} ± {se['pinned_bias']:.3f}{'yes' if ok else 'NO':>5}"
              f"{g['flagged'].mean():>9.1%}{cover:>10.1%}")
    subj = table.assign(s=table.groupby(["rep", "parameter"]).cumcount()).groupby(["rep", "s"])["flagged"].any()
    first = table[table["parameter"] == table["parameter"].iloc[0]]
    failed = (first["kind"] == "fit failed").mean()
    print(f"  subjects with any parameter flagged: {subj.mean():.1%} (failed fit {failed:.1%}); "
          "flags per parameter by kind: " + "; ".join(
              f"{p} " + ", ".join(f"{n} {k}" for k, n in g["kind"].value_counts().items())
              for p, g in table.groupby("parameter", sort=False) if g["kind"].notna().any()))
    if model_name in PLANNED_CONTRAST:
        what, parts = PLANNED_CONTRAST[model_name]
        print(f"  the plan's parameter of interest, {what}: {contrast_flag_share(table, parts):.1%} of subjects "
              "flagged (either part)")


def spektor() -> None:
    """Spektor et al.'s 282 participants: flag share and the all-participant medians."""
    exp = get_experiment("risky-choice")
    table = exp.importer("psych201").load(SPEKTOR)
    model = exp.model("prospect-theory")
    t0 = time.process_time()
    fits = model.fit_identified(table)
    fitted = fits[fits["lambda"].notna()]
    cpu = time.process_time() - t0
    print(f"\nSpektor et al. (2024), {len(fits)} participants, prospect theory by MLE ({cpu:.0f} s "
          f"CPU): {len(fitted)} fitted, {int((~fitted['identified']).sum())} flagged "
          f"({(~fitted['identified']).mean():.1%}); medians over all fitted: "
          + ", ".join(f"{p} {fitted[p].median():.3f}" for p in model.parameters.names))
    kinds = fitted.loc[~fitted["identified"], "null_reason"].str.partition(":")[0].value_counts()
    print("  flags: " + (", ".join(f"{n} {k}" for k, n in kinds.items()) or "none"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--subjects", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", default="", help="run only the cases whose name contains this text")
    parser.add_argument("--spektor", action="store_true", help="also Spektor et al.'s 282 participants")
    args = parser.parse_args()
    for name, (experiment, model_name, agent, draw) in CASES.items():
        if args.only and args.only not in name:
            continue
        model = get_experiment(experiment).model(model_name)
        rng = np.random.default_rng(args.seed)
        t0 = time.process_time()
        parts = [one_rep(experiment, model, agent, draw(model, args.subjects, rng), args.subjects,
                         args.seed * 1000 + rep).assign(rep=rep) for rep in range(args.reps)]
        report(name, pd.concat(parts, ignore_index=True), model_name)
        cpu = time.process_time() - t0
        print(f"  {cpu:.0f} s CPU, {1000 * cpu / (args.reps * args.subjects):.0f} ms per subject (fit + intervals)")
    if args.spektor:
        spektor()


if __name__ == "__main__":
    main()
