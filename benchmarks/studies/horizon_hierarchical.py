"""Thirty horizon-task subjects of several games each, fitted hierarchically: true against estimated per parameter.

Each subject's five information-bonus parameters are drawn uniformly from the population the design check's rule
is stated on (each parameter's prior central 90 %, :meth:`~cogtestbed.parameters.Parameter.central_range`: the
true values of ``recover --sampler uniform``), the subject plays ``--games`` games (``ct.simulate(...,
sessions=K)``), and the hierarchical model is fitted to all of them (``ct.fit(..., method="hierarchical")``).
Printed: the design check's verdict at that many games (:func:`cogtestbed.identifiability`: ``identified`` by
its rule), Pearson r between each subject's true value and its posterior mean (on the scale a recovery scores
r on: the log for the temperatures), the largest R-hat of the posterior, and what ``ct.fit`` told the user about
the design (its one-line :class:`~cogtestbed.identified_sessions.IdentificationWarning`: the parameters the check's
rule does not identify at that many games).  ``--games 0``: the check's suggested games a subject.

    nice .venv/bin/python benchmarks/studies/horizon_hierarchical.py --subjects 30 --games 10
    nice .venv/bin/python benchmarks/studies/horizon_hierarchical.py --subjects 30 --games 0
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import numpy as np

import cogtestbed as ct
from cogtestbed.identifiability import identifiability, scored_values
from cogtestbed.registry import get_experiment


def true_parameters(subjects: int, seed: int) -> dict[str, np.ndarray]:
    """Each subject's parameters, uniform over each parameter's prior central 90 % (the check's population)."""
    rng = np.random.default_rng(seed)
    return {p.name: rng.uniform(*p.central_range(), subjects)
            for p in get_experiment("horizon").model("info-bonus").parameters}


def measure(subjects: int = 30, games: int = 10, draws: int = 1000, chains: int = 4, seed: int = 0) -> dict[str, Any]:
    """The check's verdict, r per parameter (true against posterior mean), the largest R-hat and the fit's
    warnings."""
    return run(subjects, games, draws, chains, seed)[0]


def run(subjects: int = 30, games: int = 10, draws: int = 1000, chains: int = 4,
        seed: int = 0) -> tuple[dict[str, Any], Any]:
    """(:func:`measure`'s figures, the hierarchical fit)."""
    import warnings

    import arviz as az

    from cogtestbed.identified_sessions import IdentificationWarning

    if games == 0:
        games = identifiability("horizon", "info-bonus", seed=seed).suggested_sessions or 1
    check = identifiability("horizon", "info-bonus", sessions=games, seed=seed)
    params = get_experiment("horizon").model("info-bonus").parameters
    truth = true_parameters(subjects, seed)
    table = ct.simulate("horizon", "info-bonus", subjects=subjects, sessions=games, seed=seed + 1,
                        params={k: v.tolist() for k, v in truth.items()})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", IdentificationWarning)
        fit = ct.fit("horizon", table, "info-bonus", method="hierarchical", draws=draws, chains=chains, seed=seed)
    told = [str(w.message) for w in caught if issubclass(w.category, IdentificationWarning)]
    post = fit.idata.posterior
    order = np.argsort(post.coords["subject"].values.astype(int))
    r = {p: float(np.corrcoef(scored_values(params[p], truth[p]),
                              scored_values(params[p], post[p].mean(("chain", "draw")).values[order]))[0, 1])
         for p in truth}
    rhat = az.rhat(post)
    return {"subjects": subjects, "games": games, "draws": draws, "chains": chains,
            "identified": dict(zip(check.parameters, map(bool, check.table["identified"]), strict=True)),
            "r": r, "max_rhat": float(max(float(rhat[v].max()) for v in rhat.data_vars)), "told": told}, fit


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--subjects", type=int, default=30)
    ap.add_argument("--games", type=int, default=10, help="Games a subject (0: the check's suggested games).")
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    print(json.dumps(measure(a.subjects, a.games, a.draws, a.chains, a.seed), indent=1))


if __name__ == "__main__":
    main()
