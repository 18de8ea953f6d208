"""Identifiable by design: what one subject's design can and cannot pin, before anything is simulated or bought.

:func:`identifiability` computes the **expected Fisher information of one subject** at a design,
numerically from the model's own likelihood: it simulates sessions from the model's generator at a
parameter point, takes each session's *observed information* — the Hessian of the negative
log-likelihood on the unconstrained scale, by central differences of the model's exact gradient — and
averages them (Efron & Hinkley 1978: the observed information's mean is the expected information).
No model has its own formula; the check dispatches on the model contract
(:class:`~cogtestbed.inference.base.CognitiveModel`) and the experiment's generator.

What it reports, per parameter, at the **prior median** (each parameter's prior mean on the
unconstrained scale, mapped to its natural value) and over **population draws**:

* ``se``: the expected standard error of the subject's maximum-likelihood estimate at the prior median,
  √((K·Ī)⁻¹)ⱼⱼ for a subject of K sessions with per-session information Ī, on the natural scale (the
  unconstrained SE times the transform's slope, :meth:`~cogtestbed.parameters.Parameter.constrained_slope`);
* ``population_sd``: the spread of the parameter over the **population** a recovery draws true values from
  (``recover --sampler uniform``: independent uniform draws over each parameter's prior central 90 %,
  :meth:`~cogtestbed.parameters.Parameter.central_range`), on the scale a recovery scores r on (the log scale
  for a log-transformed parameter, the natural scale otherwise);
* ``se_population``: the expected SE over that population: the :data:`SE_QUANTILE` quantile of the SE (on
  the same scale) at ``draws`` Latin-hypercube draws from it (SciPy's :class:`~scipy.stats.qmc.LatinHypercube`;
  with no draws, the SE at the prior median), for a subject of K sessions;
* ``identified``: the **rule** — the subject's design is of full rank in the parameter (``identifiable``) and
  ``se_population`` is at most ``tolerance`` × ``population_sd``.  An estimate with error SD ``s`` on true
  values of SD ``σ`` correlates with them at r = 1/√(1 + (s/σ)²) in expectation, so the default tolerance
  :data:`DEFAULT_TOLERANCE` 0.5 implies r ≈ 0.89 (:func:`implied_r`) for a subject whose SE is at the
  population's :data:`SE_QUANTILE` quantile, and more on average — when the estimate is regular (the
  asymptotic SE holds);
* ``sessions_to_identify``: the fewest sessions after which a simulated subject's information — the sum
  of its observations' score outer products, of rank at most its number of observations — is of full
  rank in that parameter (its direction lies outside the null space) for at least
  :data:`IDENTIFIED_SHARE` of the simulated subjects; a single session of a small design (one
  horizon-task game: one choice, five parameters) is rank-deficient;
* ``sessions_for_tolerance``: the fewest sessions that identify the parameter by the rule (SE falls as
  1/√K), at least ``sessions_to_identify``; null where no subject of up to :data:`MAX_SUGGESTED_SESSIONS`
  sessions does (the parameter is **not identified up to** that many sessions).

:attr:`DesignInformation.suggested_sessions` is the largest ``sessions_for_tolerance``: the fewest sessions a
subject at which every parameter the rule can reach within the cap is identified.  At the experiment's default
design, :meth:`DesignInformation.default_subject` says what the experiment's default subject (the sessions
``simulate`` gives a subject) identifies by the rule, and each parameter's ``se_ratio`` there that it does not.

Rank and condition number are those of the per-session expected information at the prior median
(scaled to unit diagonal, so that a parameter's units do not matter).  A parameter is **rank-deficient at the
design** where a subject of the design's sessions is rank-deficient in it
(:attr:`DesignInformation.unidentified`); :meth:`DesignInformation.refusal` is then the one line that
names it and the smallest design of full rank (``recover`` and ``plan`` refuse with it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.errors import InputError

#: The default tolerance: the population's SE under this share of the population's SD (r ≈ 0.89).
DEFAULT_TOLERANCE = 0.5
#: Simulated subjects (chains of sessions) per parameter point.
DEFAULT_CHAINS = 16
#: Population draws (Latin hypercube) besides the prior median.
DEFAULT_DRAWS = 32
#: Sessions a chain at each population draw (its information: the mean over ``chains`` x this many sessions).
DRAW_SESSIONS = 8
#: The quantile of the SE over the population draws that the rule holds to the tolerance.
SE_QUANTILE = 0.9
#: The most sessions a chain grows to when looking for the smallest design of full rank.
MAX_SESSIONS = 128
#: The most sessions a subject the check suggests: a parameter the rule does not reach by then is not identified
#: up to this many sessions (CogBench played 1000 horizon-task games an LLM).
MAX_SUGGESTED_SESSIONS = 1000
#: Share of simulated subjects that must be of full rank in a parameter for it to count as identified.
IDENTIFIED_SHARE = 0.9
#: Step of the central differences of the gradient, on the unconstrained scale.
HESSIAN_STEP = 1e-4
#: An eigenvalue of the unit-diagonal information under this counts as zero (the null space).
NULL_EIGENVALUE = 1e-6
#: A diagonal entry under this share of the largest counts as no information at all.
NULL_DIAGONAL = 1e-9
#: A parameter whose direction has more than this squared length in the null space is not identified.
NULL_SHARE = 0.01


@dataclass(frozen=True)
class DesignInformation:
    """The result of :func:`identifiability` (see the module docstring for every column).

    Attributes
    ----------
    experiment, model : str
        The design's experiment and the model judged.
    sessions, trials_per_session : int
        The design's size.
    table : pandas.DataFrame
        Per parameter: identified or not.
    rank : int
        The Fisher information's rank.
    condition_number : float
        Its condition number.

    Examples
    --------
    >>> import cogtestbed as ct
    >>> [f for f in ("rank", "condition_number", "table") if f in ct.DesignInformation.__dataclass_fields__]
    ['rank', 'condition_number', 'table']
    """

    experiment: str
    model: str
    sessions: int
    trials_per_session: int
    tolerance: float
    table: pd.DataFrame
    rank: int
    condition_number: float
    information: np.ndarray = field(repr=False)
    #: Share of the simulated sessions whose observed information at the point is positive definite: under 1,
    #: the log-likelihood of one session is not locally quadratic there and the asymptotic SE is optimistic
    #: (the maximum-likelihood estimate is not yet regular).
    regular_share: float = 1.0
    #: Population draws the SE was taken over (0: the prior median only).
    draws: int = 0
    #: The sessions ``simulate`` gives a subject of the experiment by default (None: the design is not the
    #: experiment's default, so its default subject is not judged).
    default_sessions: int | None = None

    @property
    def parameters(self) -> list[str]:
        return [str(p) for p in self.table["parameter"]]

    @property
    def unidentified(self) -> list[str]:
        """Parameters in which a subject of the design's sessions is rank-deficient (what ``recover`` and ``plan``
        refuse)."""
        return [str(p) for p, ok in zip(self.table["parameter"], self.table["identifiable"], strict=True)
                if not ok]

    @property
    def smallest_sessions(self) -> int | None:
        """The fewest sessions a subject of full rank in every parameter (None: none up to :data:`MAX_SESSIONS`)."""
        need = self.table["sessions_to_identify"]
        return None if need.isna().any() else int(need.max())

    @property
    def suggested_sessions(self) -> int | None:
        """The fewest sessions a subject at which every parameter the rule reaches within
        :data:`MAX_SUGGESTED_SESSIONS` is identified (None: it reaches none)."""
        need = self.table["sessions_for_tolerance"].dropna()
        return int(need.max()) if len(need) else None

    @property
    def not_identified(self) -> list[str]:
        """Parameters no subject of up to :data:`MAX_SUGGESTED_SESSIONS` sessions identifies by the rule."""
        return [str(p) for p, k in zip(self.table["parameter"], self.table["sessions_for_tolerance"], strict=True)
                if pd.isna(k)]

    def ratio_at(self, sessions: int) -> dict[str, float]:
        """Each parameter's ``se_ratio`` for a subject of ``sessions`` sessions (the SE falls as 1/√K; inf: the
        population's SE is not finite)."""
        scale = math.sqrt(self.sessions / sessions)
        return {str(p): (float(r) * scale if pd.notna(r) else math.inf)
                for p, r in zip(self.table["parameter"], self.table["se_ratio"], strict=True)}

    def identified_at(self, sessions: int) -> list[str]:
        """The parameters a subject of ``sessions`` sessions identifies by the rule (full rank, and its
        ``se_ratio`` at that many sessions at most the tolerance)."""
        ratio = self.ratio_at(sessions)
        return [str(p) for p, k in zip(self.table["parameter"], self.table["sessions_to_identify"], strict=True)
                if pd.notna(k) and int(k) <= sessions and ratio[str(p)] <= self.tolerance]

    def default_subject(self) -> str | None:
        """One line: what the experiment's default subject (:attr:`default_sessions`) identifies by the rule
        and, for each parameter it does not, its ``se_ratio`` there against the tolerance (None: not judged)."""
        k = self.default_sessions
        if k is None:
            return None
        ok = self.identified_at(k)
        ratio = self.ratio_at(k)
        missing = [f"{p} (se_ratio {ratio[p]:.2f} > {self.tolerance:g})" if math.isfinite(ratio[p])
                   else f"{p} (no finite SE)" for p in self.parameters if p not in ok]
        return (f"default subject ({k} session(s), what simulate gives a subject): identifies "
                f"{', '.join(ok) if ok else 'no parameter'}" + (f"; not {', '.join(missing)}" if missing else ""))

    @property
    def rule(self) -> str:
        """The rule, in words, with the r it implies."""
        over = (f"the {SE_QUANTILE:.0%} quantile over {self.draws} population draws" if self.draws
                else "at the prior median")
        return (f"identified: full rank, and the expected SE ({over}) at most {self.tolerance:g} x the "
                f"population's SD (uniform over each parameter's prior central 90 %, on the scale r is scored "
                f"on): r about {implied_r(self.tolerance):.2f} between true values and regular estimates")

    def refusal(self, flag: str = "--sessions") -> str | None:
        """One line naming the rank-deficient parameters and the smallest design of full rank (None: none);
        ``flag``: the option that sets a subject's sessions (``--sessions``; ``--runs`` for ``recover`` and
        ``plan``)."""
        from cogtestbed.identified_sessions import format_refusal

        missing = self.unidentified
        if not missing:
            return None
        return format_refusal(self.experiment, self.model, self.sessions, missing, self.smallest_sessions, flag,
                              limit=MAX_SESSIONS)

    def suggestion(self) -> str:
        """One line: the suggested sessions a subject and what no size up to the cap identifies."""
        k = self.suggested_sessions
        head = (f"suggested: {k} session(s) a subject (identifies "
                f"{', '.join(p for p in self.parameters if p not in self.not_identified)})" if k is not None
                else "suggested: none")
        missing = self.not_identified
        tail = (f"; not identified up to {MAX_SUGGESTED_SESSIONS} sessions: {', '.join(missing)}" if missing
                else "")
        return head + tail

    def summary(self) -> str:
        """The check as printed by ``cogtestbed check-design``."""
        head = (f"{self.experiment} / {self.model}: {self.sessions} session(s) a subject, "
                f"{self.trials_per_session} trials a session; information rank {self.rank} of "
                f"{len(self.table)}, condition number {_number(self.condition_number)}")
        cols = ["parameter", "prior_median", "se", "population_sd", "se_population", "se_ratio", "identified",
                "sessions_to_identify", "sessions_for_tolerance"]
        shown = self.table[cols].astype(object)
        body = shown.where(shown.notna(), "null").to_string(index=False, float_format=lambda x: f"{x:.4g}")
        refusal = self.refusal()
        default = self.default_subject()
        return "\n".join([head, self.rule, body, self.suggestion(), *([default] if default else []),
                          *([refusal] if refusal else [])])


def _number(x: float) -> str:
    return "inf" if not math.isfinite(x) else f"{x:.3g}"


def identifiability(experiment: str | Any, model: str, design: Any = None, sessions: int = 1,
                    tolerance: float = DEFAULT_TOLERANCE, draws: int = DEFAULT_DRAWS,
                    chains: int = DEFAULT_CHAINS, seed: int = 0) -> DesignInformation:
    """The expected information of one subject of ``sessions`` sessions of ``design`` (the experiment's
    default where None) under ``model``, and what it identifies (module docstring): ``tolerance`` the largest
    ratio of the population's SE to the population's SD that identifies a parameter, ``draws`` the population
    draws the SE is taken over.  Seeded: the same arguments give the same table."""
    from cogtestbed.registry import get_experiment

    exp = get_experiment(experiment) if isinstance(experiment, str) else experiment
    fitter = exp.model(model)
    if sessions < 1:
        raise InputError(f"sessions must be at least 1, got {sessions}")
    if not tolerance > 0 or not math.isfinite(tolerance):
        raise InputError(f"tolerance must be a positive number, got {tolerance}")
    if draws < 0:
        raise InputError(f"draws must be at least 0, got {draws}")
    default_sessions = int(exp.subject_sessions) if design is None else None
    design = _design(exp, design)
    params = list(fitter.parameters)
    rng = np.random.default_rng(seed)
    median = np.array([float(p.inside(p.to_constrained(p.prior_mean))) for p in params])
    need, chained = _sessions_to_identify(exp, fitter, design, median,
                                          _chain_hessians(exp, fitter, design, median, chains, 1, rng), rng)
    info = _mean_information(chained)
    se_u = _unconstrained_se(info)
    slope = np.array([float(p.constrained_slope(x)) for p, x in zip(params, median, strict=True)])
    points = _population_draws(params, draws, rng)
    draw_se = np.array([_scored_se(params, point, _unconstrained_se(_mean_information(
        _chain_hessians(exp, fitter, design, point, chains, DRAW_SESSIONS, rng)))) for point in points])
    with np.errstate(invalid="ignore"):  # a draw whose information misses a direction: an infinite SE
        se_pop = (np.nan_to_num(np.quantile(draw_se, SE_QUANTILE, axis=0), nan=math.inf) if len(points)
                  else _scored_se(params, median, se_u))
    rows = [_parameter_row(p, median[j], se_u[j], slope[j], float(se_pop[j]), need[j], sessions, tolerance)
            for j, p in enumerate(params)]
    table = pd.DataFrame(rows).astype({"sessions_to_identify": "Int64", "sessions_for_tolerance": "Int64",
                                       "se": float, "se_unconstrained": float, "se_population": float,
                                       "population_sd": float, "se_ratio": float})
    rank, cond = _rank_condition(info)
    sessions_info = chained[:, :, 0].reshape(-1, *chained.shape[3:])
    regular = float(np.mean([bool(np.all(np.linalg.eigvalsh(h) > 0)) for h in sessions_info]))
    return DesignInformation(exp.name, fitter.name, sessions, int(design.n_trials), tolerance, table, rank, cond,
                             info, regular, len(points), default_sessions)


def implied_r(tolerance: float) -> float:
    """The correlation between true values and estimates whose error SD is ``tolerance`` times the true values'
    SD: 1/√(1 + tolerance²) (unbiased estimates, errors independent of the true values)."""
    return 1.0 / math.sqrt(1.0 + tolerance ** 2)


def scored_values(p: Any, x: Any) -> np.ndarray:
    """``x`` on the scale a recovery scores r on: the log for a log-transformed parameter, else as is."""
    return np.log(np.asarray(x, float)) if p.transform == "log" else np.asarray(x, float)


def population_sd(p: Any) -> float:
    """The SD, on the scale r is scored on (:func:`scored_values`), of values uniform over the parameter's
    :meth:`~cogtestbed.parameters.Parameter.central_range` (exact: the uniform's moments, of its log where
    scored on the log scale)."""
    lo, hi = p.central_range()
    if not hi > lo:
        return 0.0
    if p.transform != "log":
        return (hi - lo) / math.sqrt(12.0)
    if lo <= 0:
        return math.inf

    def moment(x: float, k: int) -> float:  # antiderivatives of log(x) and log(x)^2
        return x * (math.log(x) - 1) if k == 1 else x * (math.log(x) ** 2 - 2 * math.log(x) + 2)

    m1 = (moment(hi, 1) - moment(lo, 1)) / (hi - lo)
    m2 = (moment(hi, 2) - moment(lo, 2)) / (hi - lo)
    return math.sqrt(max(m2 - m1 ** 2, 0.0))


def _population_draws(params: list[Any], draws: int, rng: np.random.Generator) -> list[np.ndarray]:
    """``draws`` points of the population (:func:`population_sd`): a Latin hypercube over the central ranges,
    so that every parameter's range is covered in ``draws`` strata."""
    if draws == 0:
        return []
    from scipy.stats import qmc

    unit = qmc.LatinHypercube(d=len(params), seed=rng).random(draws)
    bounds = np.array([p.central_range() for p in params])
    return list(bounds[:, 0] + unit * (bounds[:, 1] - bounds[:, 0]))


def _scored_se(params: list[Any], point: np.ndarray, se_u: np.ndarray) -> np.ndarray:
    """One session's unconstrained SEs at ``point`` on the scale r is scored on (:func:`scored_values`): the
    unconstrained SE of a log-transformed parameter (its unconstrained scale is the log, up to its lower
    bound), else times the transform's slope."""
    return np.array([s if p.transform == "log" else s * float(p.constrained_slope(x))
                     for p, s, x in zip(params, se_u, point, strict=True)])


def _parameter_row(p: Any, median: float, se_u: float, slope: float, se_pop: float, k_id: int | None,
                   sessions: int, tolerance: float) -> dict[str, Any]:
    """One parameter's line of the check: its expected SE over ``sessions`` sessions (at the prior median,
    natural and unconstrained; over the population, on the scored scale, against the population's SD) and the
    sessions that identify it (full rank; the rule)."""
    sd = population_sd(p)
    with np.errstate(invalid="ignore", divide="ignore"):
        for_tol = math.ceil((se_pop / (tolerance * sd)) ** 2) if sd > 0 and math.isfinite(se_pop) else math.inf
    tol_k = (None if k_id is None or not math.isfinite(for_tol) or max(k_id, for_tol) > MAX_SUGGESTED_SESSIONS
             else int(max(k_id, for_tol, 1)))
    root = math.sqrt(sessions)
    finite = math.isfinite(se_u)
    se_now = se_pop / root if math.isfinite(se_pop) else None
    ratio = se_now / sd if se_now is not None and sd > 0 else None
    identifiable = k_id is not None and k_id <= sessions
    return {
        "parameter": p.name, "prior_median": median,
        "se": se_u * slope / root if finite else None,
        "se_unconstrained": se_u / root if finite else None,
        "population_sd": sd, "se_population": se_now, "se_ratio": ratio,
        "identifiable": identifiable,
        "identified": bool(identifiable and ratio is not None and ratio <= tolerance),
        "sessions_to_identify": k_id, "sessions_for_tolerance": tol_k,
    }


def _design(exp: Any, design: Any) -> Any:
    """The experiment's default design, a design with the fields of a mapping, or the design given."""
    from pydantic import ValidationError

    if design is None or isinstance(design, Mapping):
        try:
            return exp.design_cls(**dict(design or {}))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(map(str, first["loc"]))
            raise InputError(f"design of {exp.name}: {where + ': ' if where else ''}{first['msg']}") from None
    return design


def _mean_information(chained: np.ndarray) -> np.ndarray:
    """The expected information of one session: the mean of every simulated session's observed information."""
    return chained[:, :, 0].reshape(-1, *chained.shape[3:]).mean(axis=0)


def _session_hessians(exp: Any, fitter: Any, design: Any, theta: np.ndarray, n: int,
                      seed: int) -> np.ndarray:
    """(n, 2, K, K): per simulated session at natural ``theta``, on the unconstrained scale, its observed
    information (central differences of the exact gradient) and the sum of its observations' score outer
    products (rank at most the number of observations: what a subject's rank is judged on)."""
    from cogtestbed.simulation import simulate

    params = list(fitter.parameters)
    gen = exp.generator(fitter.name)
    values = dict(zip(fitter.parameters.names, theta.tolist(), strict=True))
    table = simulate(exp, gen.agent, n, seed, gen.agent_params(values), design=design)
    data = fitter.subject_data(table)
    u0 = np.array([float(p.to_unconstrained(x)) for p, x in zip(params, theta, strict=True)])
    k = len(params)
    out = np.zeros((n, 2, k, k))
    slope = np.array([float(p.constrained_slope(x)) for p, x in zip(params, theta, strict=True)])
    for i, key in enumerate(sorted(data, key=str)[:n]):
        out[i, 0] = _hessian(fitter, params, data[key], u0)
        _, grad = fitter.pointwise(theta, data[key])
        scores = np.asarray(grad, float) * slope
        out[i, 1] = scores.T @ scores
    return out


def _unconstrained_gradient(fitter: Any, params: list[Any], data: Any, u: np.ndarray) -> np.ndarray:
    theta = np.array([float(p.to_constrained(x)) for p, x in zip(params, u, strict=True)])
    _, grad = fitter.nll_grad(theta, data)
    slope = np.array([float(p.constrained_slope(x)) for p, x in zip(params, theta, strict=True)])
    return np.asarray(grad, float) * slope


def _hessian(fitter: Any, params: list[Any], data: Any, u0: np.ndarray) -> np.ndarray:
    k = len(u0)
    h = np.zeros((k, k))
    for c in range(k):
        step = np.zeros(k)
        step[c] = HESSIAN_STEP
        up = _unconstrained_gradient(fitter, params, data, u0 + step)
        down = _unconstrained_gradient(fitter, params, data, u0 - step)
        h[:, c] = (up - down) / (2 * HESSIAN_STEP)
    return 0.5 * (h + h.T)


def _chain_hessians(exp: Any, fitter: Any, design: Any, theta: np.ndarray, chains: int, per_chain: int,
                    rng: np.random.Generator) -> np.ndarray:
    """(chains, per_chain, 2, K, K): sessions' information (:func:`_session_hessians`), grouped as simulated
    subjects."""
    seed = int(rng.integers(2**31))
    return _session_hessians(exp, fitter, design, theta, chains * per_chain, seed).reshape(
        chains, per_chain, 2, len(theta), len(theta))


def identified_directions(info: np.ndarray) -> np.ndarray:
    """Which parameters ``info`` (an information matrix) identifies: a direction with information of its own
    and (almost) none of its length in the null space of the unit-diagonal matrix."""
    d = np.diag(info).copy()
    ok = np.isfinite(d) & (np.abs(d) > NULL_DIAGONAL * max(float(np.max(np.abs(d), initial=0.0)), 1e-300))
    out = np.zeros(len(d), bool)
    idx = np.flatnonzero(ok)
    if not idx.size:
        return out
    scale = np.sqrt(np.abs(d[idx]))
    corr = info[np.ix_(idx, idx)] / np.outer(scale, scale)
    values, vectors = np.linalg.eigh(corr)
    null = vectors[:, np.abs(values) < NULL_EIGENVALUE]  # curvature of either sign is information
    out[idx] = (null ** 2).sum(axis=1) < NULL_SHARE
    return out


def _sessions_to_identify(exp: Any, fitter: Any, design: Any, theta: np.ndarray, chained: np.ndarray,
                          rng: np.random.Generator) -> tuple[list[int | None], np.ndarray]:
    """Per parameter, the fewest sessions identifying it in :data:`IDENTIFIED_SHARE` of the chains (None:
    none up to :data:`MAX_SESSIONS`), and every chain's sessions; chains grow by doubling until every
    parameter is identified."""
    k = chained.shape[3]
    found: list[int | None] = [None] * k
    while True:
        sums = np.cumsum(chained[:, :, 1], axis=1)
        for n in range(sums.shape[1]):
            share = np.mean([identified_directions(sums[c, n]) for c in range(sums.shape[0])], axis=0)
            for j in range(k):
                if found[j] is None and share[j] >= IDENTIFIED_SHARE:
                    found[j] = n + 1
        length = chained.shape[1]
        if all(f is not None for f in found) or length >= MAX_SESSIONS:
            return found, chained
        more = _chain_hessians(exp, fitter, design, theta, chained.shape[0], length, rng)
        chained = np.concatenate([chained, more], axis=1)


def _unconstrained_se(info: np.ndarray) -> np.ndarray:
    """√ of the inverse's diagonal where the information identifies the parameter; inf elsewhere."""
    ok = identified_directions(info)
    se = np.full(len(info), math.inf)
    if ok.any():
        sub = info[np.ix_(ok, ok)]
        try:
            cov = np.linalg.inv(sub)
        except np.linalg.LinAlgError:
            return se
        diag = np.diag(cov)
        se[ok] = np.where(diag > 0, np.sqrt(np.abs(diag)), math.inf)
    return se


def _rank_condition(info: np.ndarray) -> tuple[int, float]:
    d = np.diag(info)
    if not np.all(d > 0):
        return int(identified_directions(info).sum()), math.inf
    scale = np.sqrt(d)
    values = np.linalg.eigvalsh(info / np.outer(scale, scale))
    rank = int((values >= NULL_EIGENVALUE).sum())
    cond = float(values[-1] / values[0]) if values[0] > 0 else math.inf
    return rank, cond




#: Simulated subjects of the check run before a study (:func:`refuse_unidentified`) and of the shipped table
#: (:mod:`cogtestbed.identified_sessions`): the check's own, so that a refusal, the shipped table and
#: ``check-design`` name the same smallest design.
REFUSAL_CHAINS = DEFAULT_CHAINS


def refuse_unidentified(experiment: str | Any, model: str, design: Any, sessions: int, seed: int = 0,
                        flag: str = "--sessions") -> None:
    """Raise :class:`~cogtestbed.errors.InputError` with :meth:`DesignInformation.refusal` where a subject of
    ``sessions`` sessions of ``design`` does not identify a parameter of ``model`` (``recover`` and ``plan``
    run it before simulating anything; ``flag``: the option that sets a subject's sessions)."""
    result = identifiability(experiment, model, design, sessions=sessions, draws=0, chains=REFUSAL_CHAINS,
                             seed=seed)
    refusal = result.refusal(flag)
    if refusal is not None:
        raise InputError(refusal)


def shipped_table(experiments: list[str] | None = None) -> dict[str, dict[str, dict[str, int | None]]]:
    """Each package experiment's models' ``sessions_to_identify`` per parameter at the default design, as
    :mod:`cogtestbed.identified_sessions` ships them (the check of :func:`refuse_unidentified`, one session)."""
    from cogtestbed.registry import experiment_names, get_experiment

    out: dict[str, dict[str, dict[str, int | None]]] = {}
    for name in experiments or experiment_names():
        exp = get_experiment(name)
        out[name] = {}
        for model in exp.models:
            result = identifiability(exp, model, None, sessions=1, draws=0, chains=REFUSAL_CHAINS, seed=0)
            out[name][model] = {str(p): (None if pd.isna(k) else int(k))
                                for p, k in zip(result.table["parameter"], result.table["sessions_to_identify"],
                                                strict=True)}
    return out


#: Experiments whose default subject the shipped rule table covers (:func:`shipped_rule`): those whose default
#: subject is several sessions (the rule's 32 population draws cost seconds a model, too many for every model).
RULE_EXPERIMENTS = ("horizon",)


def shipped_rule(experiments: list[str] | None = None) -> dict[str, dict[str, dict[str, int | None]]]:
    """Each of :data:`RULE_EXPERIMENTS`' models' ``sessions_for_tolerance`` per parameter at the default design
    (the rule: :func:`identifiability`'s defaults, seed 0, one session), as
    :data:`cogtestbed.identified_sessions.SHIPPED_RULE` ships them."""
    from cogtestbed.registry import get_experiment

    out: dict[str, dict[str, dict[str, int | None]]] = {}
    for name in experiments or list(RULE_EXPERIMENTS):
        exp = get_experiment(name)
        out[name] = {}
        for model in exp.models:
            result = identifiability(exp, model, None, sessions=1, seed=0)
            out[name][model] = {str(p): (None if pd.isna(k) else int(k))
                                for p, k in zip(result.table["parameter"], result.table["sessions_for_tolerance"],
                                                strict=True)}
    return out


def write_shipped(rule_only: bool = False) -> None:
    """Write :data:`cogtestbed.identified_sessions.SHIPPED` and :data:`~cogtestbed.identified_sessions.SHIPPED_RULE`
    (``python -m cogtestbed.identifiability``; ``rule_only``: the second only, ``... rule``)."""
    import json

    from cogtestbed.identified_sessions import SHIPPED, SHIPPED_RULE

    if not rule_only:
        SHIPPED.write_text(json.dumps(shipped_table(), indent=1) + "\n")
    SHIPPED_RULE.write_text(json.dumps(shipped_rule(), indent=1) + "\n")


if __name__ == "__main__":
    import sys

    write_shipped(rule_only=sys.argv[1:] == ["rule"])
