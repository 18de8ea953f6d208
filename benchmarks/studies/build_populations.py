"""Build the populations the package ships (``cogtestbed/data/populations/NAME.json``, issue 52).

Each is a hierarchical fit of a human data set in ``../shared/data`` kept as a population
(:func:`cogtestbed.build_population`: refused above R-hat 1.01 or with divergences).  The
configuration of each (data, model, subset, sampler settings) is in :data:`POPULATIONS`; a subset
of participants is named where a fit of the whole data set takes hours of CPU with NUTS (``spektor2024-all`` is
Spektor et al.'s 282 participants, ``spektor2024`` 30 of them), and its population's ``source`` says so.

    python benchmarks/studies/build_populations.py cogbench-instrumental
    python benchmarks/studies/build_populations.py shahar2019 [--subjects N] [--low-rank]  # --sampler gibbs
    python benchmarks/studies/build_populations.py spektor2024 [--subjects N] [--draws D --max-draws M] [--centred]
    python benchmarks/studies/build_populations.py spektor2024-all   # all 282: --sampler gibbs --draws 16000

``--low-rank`` adapts nutpie's low-rank modified mass matrix instead of the model's own (diagonal
for most).  ``--tune T`` samples ``T`` tuning steps a chain instead of as many as the draws (the library's
``build_population`` tunes as long as it draws); the fit is then made with
:func:`cogtestbed.inference.hierarchical.fit_hierarchical` and kept with
:func:`cogtestbed.inference.population.population_from_fit`, the two calls ``build_population`` makes.
Every run also prints the ten variables of highest R-hat (with bulk and tail ESS), so a fit that
fails the gate says where.

The population is written only when its fit passes the gate; otherwise the script prints the fit's
diagnostics and says it wrote nothing (``--keep-unconverged PATH`` saves it there, outside the package,
so that hours of sampling are not lost).  Every run prints the fit's diagnostics (max R-hat, min bulk
and tail ESS, divergences) and its wall and CPU time (the process's, all sampler threads, and its
finished child processes: PyMC's chains).
"""

from __future__ import annotations

import argparse
import copy
import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import cogtestbed as ct
from cogtestbed.api.core import read_table
from cogtestbed.api.population import describe_population
from cogtestbed.inference.population import shipped_directory

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"


@dataclass(frozen=True)
class Build:
    experiment: str
    path: Path
    source_format: str
    model: str
    source: str
    #: Participants fitted (a seeded random subset), None: all.
    subjects: int | None = None
    draws: int = 1000
    chains: int = 4
    max_draws: int = 8000
    #: Tuning steps per chain (None: as many as the draws).
    tune: int | None = None
    #: fit_hierarchical's sampler.
    sampler: str = "auto"
    #: Sample every parameter centred (the model's own setting otherwise).
    centred: bool = False
    #: Adapt nutpie's low-rank modified mass matrix (the model's own setting otherwise), which can
    #: follow a correlated ridge that a diagonal mass matrix crosses in small steps.
    low_rank: bool = False


POPULATIONS = {
    "cogbench-instrumental": Build(
        "instrumental-learning", SHARED / "cogbench/InstrumentalLearning/human.csv", "cogbench", "rw-pm",
        "CogBench (Coda-Forno et al. 2024) human instrumental-learning data, 50 runs x 96 trials; RW+- "
        "(Lefebvre et al. 2017)"),
    # 40 of the 554, by the Metropolis-within-Gibbs sampler: nutpie (500 + 1,000 draws a chain) ended at R-hat
    # 1.087 on participant 31, whose likelihood has two regions 22 nats apart (docs/human-data.md)
    "shahar2019": Build(
        "two-step", SHARED / "psych201/shahar2019twosteptask/prompts.jsonl.zip", "psych201", "hybrid",
        "Shahar et al. 2019 (PLOS Comp. Biol.) two-step task via Psych-201 (shahar2019twosteptask, Apache-2.0), "
        "hybrid model (Daw et al. 2011); both sessions of a participant pooled", subjects=40, draws=2000,
        max_draws=4000, tune=1000, sampler="gibbs"),
    "spektor2024": Build(
        "risky-choice", SHARED / "psych201/spektor2024lossaversion/prompts.jsonl.zip", "psych201", "prospect-theory",
        "Spektor et al. 2024 (JEP:General) loss-aversion lotteries via Psych-201 (spektor2024lossaversion, "
        "Apache-2.0), prospect theory as risky-choice declares it", subjects=30, draws=1000, max_draws=1000),
    # every participant, by the Metropolis-within-Gibbs sampler (every parameter centred, per-subject HMC and
    # mode jumps: cogtestbed/inference/hierarchical_gibbs.py), 16,000 draws after 1,000 tuning steps a chain.
    # nutpie's NUTS (centred, 2,000 or 3,000 draws a chain) ended at max R-hat 1.0107 and 1.0135: participant
    # 273's likelihood has two low regions (participant_profile.py) that NUTS crosses too rarely;
    # docs/risky-choice.md, "The hierarchical fit of all 282 participants"
    "spektor2024-all": Build(
        "risky-choice", SHARED / "psych201/spektor2024lossaversion/prompts.jsonl.zip", "psych201", "prospect-theory",
        "Spektor et al. 2024 (JEP:General) loss-aversion lotteries via Psych-201 (spektor2024lossaversion, "
        "Apache-2.0), prospect theory as risky-choice declares it, every parameter sampled centred, "
        "Metropolis-within-Gibbs (sampler='gibbs')",
        draws=16000, max_draws=16000, tune=1000, centred=True, sampler="gibbs"),
}


def table_of(build: Build, subjects: int | None, seed: int = 0) -> tuple[object, str]:
    """The human trial table (a seeded random subset of ``subjects`` participants, renumbered
    0..n-1 in id order) and the words saying which."""
    exp = ct.get_experiment(build.experiment)
    table, _ = read_table(exp, build.path, build.source_format)
    total = int(table["subject"].nunique())
    if subjects is None or subjects >= total:
        return table, f"all {total} participants"
    keep = np.sort(np.random.default_rng(seed).choice(np.sort(table["subject"].unique()), subjects, replace=False))
    sub = table[table["subject"].isin(keep)].copy()
    sub["subject"] = sub["subject"].map({s: i for i, s in enumerate(keep)})
    return sub, (f"a random subset of {subjects} of the {total} participants (numpy seed {seed}; a subset, so "
                 "that the fit takes minutes of CPU, not hours)")


def configured_model(build: Build, centred: bool, low_rank: bool) -> object:
    """The build's model, on a copy that samples every parameter centred and/or adapts nutpie's low-rank
    mass matrix where asked: attributes of the copy shadow the model class's declarations
    (``centred_parameters``, ``low_rank_mass_matrix``), so the registry's model stays as declared."""
    model = copy.copy(ct.get_experiment(build.experiment).model(build.model))
    if centred:
        model.centred_parameters = tuple(model.parameters.names)
    if low_rank:
        model.low_rank_mass_matrix = True
    return model


def population(build: Build, model: object, table: object, source: str, draws: int, tune: int | None,
               max_draws: int, name: str, sampler: str = "auto") -> tuple[object, object]:
    """The population (kept whatever its diagnostics) and the hierarchical fit of ``model`` it came from:
    the two steps of :func:`cogtestbed.build_population` (which does not return the fit, and the fit's
    highest-R-hat variables are printed here), with ``tune`` tuning steps a chain (None: ``draws``)."""
    from cogtestbed.inference.hierarchical import fit_hierarchical
    from cogtestbed.inference.population import population_from_fit

    fit = fit_hierarchical(model, table, draws=draws, tune=draws if tune is None else tune, chains=build.chains,
                           seed=0, max_draws=max_draws, warn=False, log_likelihood=False,
                           sampler=sampler)  # type: ignore[arg-type]
    pop = population_from_fit(fit, name=name, experiment=build.experiment, model=model, trials=table,
                              source=source, allow_unconverged=True)
    return pop, fit


def worst_rhat(fit: object, n: int = 10) -> list[str]:
    """The ``n`` scalar variables of highest R-hat, each with its bulk and tail ESS (ArviZ's summary)."""
    import arviz as az

    table = az.summary(fit.idata, kind="diagnostics", round_to="none").nlargest(n, "r_hat")  # type: ignore[attr-defined]
    return ["highest R-hat: " + ", ".join(f"{v} {row.r_hat:.4f} (ESS {row.ess_bulk:.0f}/{row.ess_tail:.0f})"
                                          for v, row in table.iterrows())]


def cpu_seconds() -> float:
    """CPU seconds of this process (all its threads: nutpie's chains) and of its finished child processes
    (PyMC's chains, one process each)."""
    import resource

    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("name", choices=sorted(POPULATIONS))
    ap.add_argument("--subjects", type=int, default=None, help="participants fitted (default: the build's; 0: all)")
    ap.add_argument("--draws", type=int, default=None, help="draws (and tuning steps) per chain (default: the build's)")
    ap.add_argument("--max-draws", type=int, default=None, help="doubling limit (default: the build's)")
    ap.add_argument("--output", type=Path, default=None, help="default: the package's populations folder")
    ap.add_argument("--keep-unconverged", type=Path, default=None, metavar="PATH",
                    help="save a fit that fails the gate to PATH (a .json outside the package) instead of losing it")
    ap.add_argument("--tune", type=int, default=None, help="tuning steps per chain (default: as many as the draws)")
    ap.add_argument("--centred", action="store_true",
                    help="sample every parameter centred (the model's own setting otherwise)")
    ap.add_argument("--low-rank", action="store_true",
                    help="adapt nutpie's low-rank modified mass matrix (the model's own setting otherwise)")
    ap.add_argument("--sampler", choices=("auto", "nutpie", "pymc", "gibbs"), default=None,
                    help="fit_hierarchical's sampler (default: the build's; gibbs: Metropolis-within-Gibbs with "
                         "mode jumps, every parameter centred)")
    args = ap.parse_args()
    build = POPULATIONS[args.name]
    subjects = build.subjects if args.subjects is None else (args.subjects or None)
    table, which = table_of(build, subjects)
    draws = args.draws or build.draws
    out = args.output or shipped_directory() / f"{args.name}.json"
    model = configured_model(build, args.centred or build.centred, args.low_rank or build.low_rank)
    start, cpu = time.perf_counter(), cpu_seconds()
    tune = args.tune if args.tune is not None else build.tune
    pop, fit = population(build, model, table, f"{build.source}; {which}", draws, tune,
                          args.max_draws or max(build.max_draws, draws), args.name,
                          args.sampler or build.sampler)
    wall, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    print("\n".join(worst_rhat(fit)))
    print("\n".join(describe_population(pop)))
    print(json.dumps({"population": args.name, "subjects": pop.subjects, "fit": pop.fit,
                      "wall_s": round(wall), "cpu_s": round(cpu)}), flush=True)
    if pop.fit.get("unconverged_allowed"):
        print("NOT written: the fit fails the population gate (R-hat <= 1.01, 0 divergences)")
        keep = args.keep_unconverged
        if keep is not None and keep.resolve().parent != shipped_directory().resolve():
            pop.save(keep)
            print(f"kept the unconverged fit in {keep} (load it with population=PATH; it is not shipped)")
        elif keep is not None:
            print(f"not kept: {keep} is in the package's populations folder, which ships what is in it")
        return
    pop.save(out)
    print(f"wrote {out} ({out.stat().st_size / 1024:.0f} kB) in {wall:.0f} s wall, {cpu:.0f} s CPU")


if __name__ == "__main__":
    main()
