"""Sampling a PyMC model of the :class:`~cogtestbed.inference.base.CognitiveModel` contract:
:func:`fit_hierarchical` (nutpie when installed, PyMC's NUTS otherwise; compiled models reused),
:func:`on_identified_subjects` (the posterior of the subjects the data identify).
:mod:`cogtestbed.inference.hierarchical` re-exports them."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib.util
import logging
import time
import warnings
from collections.abc import Callable
from typing import Any, Literal

import numpy as np
import pandas as pd

from cogtestbed.errors import InputError, outside_stacklevel
from cogtestbed.inference.hierarchical_diagnostics import BayesFit, ConvergenceWarning, Diagnostics, diagnose
from cogtestbed.inference.hierarchical_idata import shape_idata
from cogtestbed.inference.reproducible import strict_float
from cogtestbed.inference.samplers import ENTRY_POINT_GROUP, SamplerKind, SamplingJob, as_sampler, stamp
from cogtestbed.plugins import Registry

#: A sampler's name: ``auto`` or one of :data:`SAMPLERS` (the package's: nutpie, pymc, gibbs).
Sampler = Literal["auto", "nutpie", "pymc", "gibbs"] | str

#: NUTS target acceptance rate unless the model or the caller asks for another.
TARGET_ACCEPT = 0.9

#: Whether nutpie adapts a diagonal mass matrix from the draws' and the gradients' variances (nutpie's
#: own default) rather than from the draws' variance alone (Stan's estimate, what NumPyro adapts).
#: cogtestbed's choice: from the draws alone.  Measured on the NumPyro benchmark's data sets (20 subjects,
#: 4 chains x (500 + 1000), the seeded data sets of 17 models, docs/benchmarks.md "The mass matrix
#: from the draws"): 37 of 50 fits ended at R-hat <= 1.01 without a divergence, against 30 of 50 with
#: the gradients (one BART fit stuck at R-hat 1.317), at a median 1.08x the min bulk ESS per CPU-second
#: (0.57x to 9.0x).
#: The low-rank mass matrix (:attr:`~cogtestbed.inference.base.CognitiveModel.low_rank_mass_matrix`)
#: keeps nutpie's default.
MASS_MATRIX_FROM_GRADIENTS = False


def on_identified_subjects(model: Any, trials: pd.DataFrame, sample: Callable[[pd.DataFrame], BayesFit]) -> BayesFit:
    """``sample`` (a hierarchical fit) on the subjects of ``trials`` whose valid answers identify
    ``model``, under the rule of :meth:`~cogtestbed.inference.base.CognitiveModel.fit_identified`
    (:meth:`~cogtestbed.inference.base.CognitiveModel.degenerate_subjects`): the others are left
    out (the population is estimated from the identified subjects), named in the fit's
    :attr:`BayesFit.unidentified` and :attr:`BayesFit.flags`, with null rows in its subject
    summary.  Where no subject is identified (a table whose every valid answer is one value, say),
    the posterior would reflect only the prior: :class:`~cogtestbed.no_data.DegenerateAnswers` is
    raised, in one line with the reason."""
    from cogtestbed.no_data import DegenerateAnswers, degenerate_reason, unfitted_flag, valid_answers, valid_rows

    degenerate = model.degenerate_subjects(trials)
    if not degenerate:
        return sample(trials)
    kept = trials[~trials["subject"].isin(list(degenerate))]
    if valid_rows(kept) == 0:
        reason = degenerate_reason(valid_answers(trials).to_numpy(), model.min_distinct_answers) or (
            f"each of the {len(degenerate)} subjects' valid answers is degenerate ({next(iter(degenerate.values()))})")
        raise DegenerateAnswers(f"{getattr(model, 'name', 'model')}: no subject's answers identify the model: "
                                f"{reason}; a hierarchical posterior would reflect only its prior, so none is "
                                "sampled (`method` mle reports each subject null with its reason)")
    fit = sample(kept)
    fit.unidentified = dict(degenerate)
    fit.flags.append(unfitted_flag(degenerate) + f"; the posterior (population included) is of the other "
                     f"{kept['subject'].nunique()} subject(s)")
    return fit


def nutpie_available() -> bool:
    return importlib.util.find_spec("nutpie") is not None


def fit_hierarchical(
    model: Any,
    trials: pd.DataFrame,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 4,
    seed: int = 0,
    sampler: Sampler = "auto",
    hierarchical: bool = True,
    cores: int | None = None,
    target_accept: float | None = None,
    progressbar: bool = False,
    warn: bool = True,
    log_likelihood: bool = True,
    max_draws: int | None = None,
    keep_warmup: bool = False,
    posterior_predictive: bool = False,
) -> BayesFit:
    """Sample ``model.pymc_model(trials, hierarchical)`` and diagnose the run.

    ``model`` is a :class:`~cogtestbed.inference.base.CognitiveModel` (or any object with
    ``pymc_model``) or an already built ``pm.Model``.  ``sampler="auto"`` uses nutpie (Rust NUTS
    on a numba-compiled logp, Seyboldt et al.) when installed, else PyMC's NUTS; both draw from
    the same posterior.  Any other name is looked up in :data:`SAMPLERS` (``nutpie``, ``pymc``, the
    experimental ``gibbs`` of :mod:`~cogtestbed.inference.hierarchical_gibbs`, plug-ins'); the posterior's
    ``attrs`` carry the sampler's provenance (:meth:`~cogtestbed.inference.samplers.SamplerKind.provenance`).
    The returned InferenceData holds the pointwise log-likelihood (for
    PSIS-LOO; ``log_likelihood=False`` skips it, e.g. in SBC loops where it is not used).  A
    :class:`ConvergenceWarning` names every failed threshold when ``warn``.  ``target_accept``
    defaults to the model's own ``target_accept`` attribute (models with stiff posteriors, such
    as near-deterministic choosers, raise it), else :data:`TARGET_ACCEPT`.

    ``max_draws``: where a run fails only its ESS or R-hat checks (no divergent transition: those
    call for another geometry, not more draws), sample again with twice the draws per chain, the
    same seed and tuning, until every check passes or the next run would exceed ``max_draws``
    (Vehtari et al. 2021 recommend more draws for a low ESS).  ``diagnostics.n_draws`` is the draws
    per chain of the run returned, ``diagnostics.seconds`` the time of all runs.

    A seeded fit gives the same draws in every process on one machine and lock, whatever the
    state of the compilation caches (the models are compiled without fast-math,
    :func:`~cogtestbed.inference.reproducible.strict_float`); across CPUs they agree to Monte
    Carlo error.

    Ctrl-C while the chains of the package's samplers (nutpie, PyMC, Gibbs) draw raises :class:`KeyboardInterrupt`:
    the part of a run made before it is never returned as a fit (nutpie and PyMC return it from their own
    ``sample``; :func:`_wait`, :func:`_whole_run`).  A registered sampler answers Ctrl-C itself
    (:class:`~cogtestbed.inference.samplers.SamplerKind`).

    The InferenceData is shaped as PyMC users expect (:func:`~cogtestbed.inference.hierarchical_idata.shape_idata`):
    ``observed_data``; the posterior holds the model's parameters (population first), the sampler's
    internals (``k_sigma_log__``, the offsets ``k_z``) are in ``unconstrained_posterior``; every
    dimension is named; the warm-up draws are kept only with ``keep_warmup``; ``posterior_predictive``
    adds replicated choices (binary-choice models) for ``az.plot_ppc``.
    """
    import pymc as pm

    _check_sampling(draws, tune, chains, max_draws)
    if target_accept is None:
        target_accept = float(getattr(model, "target_accept", None) or TARGET_ACCEPT)
    kind = SAMPLERS.get(_sampler_to_use(sampler))
    use = kind.name
    if kind.prepare is not None and not isinstance(model, pm.Model):
        model = kind.prepare(model, trials, hierarchical)
    pm_model = model if isinstance(model, pm.Model) else model.pymc_model(trials, hierarchical)
    start = time.perf_counter()
    free = [v.name for v in pm_model.free_RVs]
    job = SamplingJob(pm_model, model, trials, hierarchical, tune=tune, chains=chains, seed=seed,
                      cores=cores or min(chains, 2), target_accept=target_accept, progressbar=progressbar)
    run = functools.partial(_sample, kind, job, kind.setup(job))
    idata = run(draws)
    diag = diagnose(idata, float("nan"), use, var_names=free)
    while _more_draws_help(diag) and max_draws is not None and 2 * draws <= max_draws:
        draws *= 2
        idata = run(draws)
        diag = diagnose(idata, float("nan"), use, var_names=free)
    diag = dataclasses.replace(diag, seconds=time.perf_counter() - start)
    if log_likelihood:
        with pm_model:
            pm.compute_log_likelihood(idata, progressbar=False)
    _add_constant_data(idata, pm_model)
    shape_idata(idata, pm_model, model, keep_warmup=keep_warmup, posterior_predictive=posterior_predictive,
                seed=seed)
    stamp(idata, kind)
    if warn and not diag.ok:
        warnings.warn(
            f"{getattr(model, 'name', 'model')}: sampler diagnostics failed: "
            + "; ".join(diag.problems) + " — do not trust this posterior without more tuning/draws"
            + (" (max_draws samples again with more draws where only ESS or R-hat fail)."
               if _more_draws_help(diag) else "."),
            ConvergenceWarning, stacklevel=outside_stacklevel(),
        )
    return BayesFit(idata, diag, getattr(model, "name", ""), choice_options=getattr(model, "choice_options", None))


def _check_sampling(draws: int, tune: int, chains: int, max_draws: int | None) -> None:
    """Refuse draws, tuning, chains or ``max_draws`` that no sampler run can take."""
    if draws < 1 or chains < 1 or tune < 0:
        raise InputError(f"sampling needs draws >= 1, chains >= 1 and tune >= 0; got draws={draws}, "
                         f"chains={chains}, tune={tune}")
    if max_draws is not None and max_draws < draws:
        raise InputError(f"max_draws ({max_draws}) must be at least draws ({draws})")


def _sampler_to_use(sampler: str) -> str:
    """``auto`` resolves to nutpie where installed, else PyMC; any other name must be registered
    (:data:`SAMPLERS`)."""
    if sampler == "auto":
        return "nutpie" if nutpie_available() else "pymc"
    if not SAMPLERS.known(sampler):
        raise InputError(f"sampler must be auto, {', '.join(SAMPLERS.names())}, got {sampler!r}")
    return sampler


def _sample(kind: SamplerKind, job: SamplingJob, state: Any, draws: int) -> Any:
    """One run of ``kind`` of ``draws`` per chain, reported to the command line's reporter where one is open
    and no bar of the sampler's own is asked for."""
    from cogtestbed.progress import for_sampling

    model, pm_model, chains, tune = job.model, job.pm_model, job.chains, job.tune
    progress = None if job.progressbar else for_sampling(
        f"sampling {getattr(model, 'name', '') or 'the model'} ({chains} chains x {tune} tune + {draws} draws)")
    if progress is not None:  # the up-front estimate, before the set-up
        units = (tune + draws) * chains / max(1, min(chains, job.cores)) * _n_observed(pm_model)
        progress.expect(f"{kind.name}:{_kind_name(model, pm_model)}", units, compiled=kind.compiled(state))
    idata = kind.sample(job, state, draws, progress)
    if progress is not None:
        progress.finish()
    return idata


def _nutpie_key(job: SamplingJob) -> tuple[Any, ...]:
    return _compiled_key(job.pm_model, getattr(job.model, "name", id(job.model)), job.hierarchical)


def _nutpie_sample(job: SamplingJob, key: tuple[Any, ...], draws: int, progress: Any) -> Any:
    """nutpie on the compiled model of ``key`` (:func:`_compiled_key`), cached or compiled; its own bar only
    where the caller asks for it, else its progress routed to ``progress`` (nutpie draws nothing itself)."""
    import nutpie

    from cogtestbed.progress import nutpie_progress

    with strict_float():
        compiled = _nutpie_compiled(job.pm_model, key, job, draws)
    entry = _COMPILED.get(key)
    python = entry.python if entry is not None and compiled is not entry.native else None
    start = python.calls() if python is not None else 0
    routed = nutpie_progress(progress, job.cores) if progress is not None else contextlib.nullcontext()
    with routed:
        idata = _wait(nutpie.sample(
            compiled, draws=draws, tune=job.tune, chains=job.chains, seed=job.seed, cores=job.cores,
            target_accept=job.target_accept, progress_bar=job.progressbar or progress is not None,
            store_divergences=False, blocking=False, **_mass_matrix_settings(job.model),
        ))
    if entry is not None and python is not None:  # the shape's rent grows by the run's counted steps
        entry.rent += _python_rent(python, job, python.calls() - start)
    return idata


def _wait(sampler: Any) -> Any:
    """The trace of nutpie's running ``sampler`` once it has drawn every draw.  Any exception while it runs, Ctrl-C's
    ``KeyboardInterrupt`` included, stops the run and propagates: nutpie's blocking ``sample`` answers Ctrl-C with
    the draws made so far, as if the run had ended, which a fit would then report as its posterior."""
    try:
        return sampler.wait()
    except BaseException:
        with contextlib.suppress(Exception):  # the exception that stopped the run is the one to see
            sampler.cancel()
        raise


#: PyMC's error for a run that ended before its first draw (``backends.base._choose_chains``): only a run stopped
#: early, since every run asks for at least one draw.
NO_DRAWS_YET = "Not enough samples to build a trace"


def _whole_run(idata: Any, draws: int, chains: int) -> Any:
    """``idata`` where it holds every chain's ``draws`` draws; else the run was stopped (PyMC's ``pm.sample`` answers
    Ctrl-C by returning the draws so far), and the fit is too: :class:`KeyboardInterrupt`."""
    posterior = getattr(idata, "posterior", None)
    sizes = dict(posterior.sizes) if posterior is not None else {}
    if sizes.get("chain", 0) < chains or sizes.get("draw", 0) < draws:
        raise KeyboardInterrupt(f"sampling stopped after {sizes.get('draw', 0)} of {draws} draws "
                                f"({sizes.get('chain', 0)} of {chains} chains)")
    return idata


def _pymc_sample(job: SamplingJob, steps: tuple[list[Any], list[dict[str, Any]]] | None, draws: int,
                 progress: Any) -> Any:
    """PyMC's ``pm.sample``: its NUTS, or ``steps`` (the Metropolis-within-Gibbs steps of
    :mod:`~cogtestbed.inference.hierarchical_gibbs` and each chain's start)."""
    import pymc as pm

    from cogtestbed.progress import pymc_callback

    extra = {"callback": pymc_callback(progress, draws, job.tune, job.chains)} if progress is not None else {}
    with job.pm_model, _quiet_pymc(), strict_float():
        try:
            idata = pm.sample(
                draws=draws, tune=job.tune, chains=job.chains, cores=job.cores, random_seed=job.seed,
                compute_convergence_checks=False, progressbar=job.progressbar, **extra,
                **({"step": steps[0], "initvals": steps[1]} if steps is not None
                   else {"target_accept": job.target_accept}),
            )
        except ValueError as error:  # PyMC's answer to a run Ctrl-C stopped before its first draw
            if NO_DRAWS_YET in str(error):
                raise KeyboardInterrupt("sampling stopped before its first draw") from error
            raise
    return _whole_run(idata, draws, job.chains)


def _all_centred(model: Any, trials: pd.DataFrame, hierarchical: bool) -> Any:
    """The model with every parameter sampled centred (the same posterior), as the Gibbs sampler needs."""
    from cogtestbed.inference.hierarchical_gibbs import all_centred

    return all_centred(model, trials, hierarchical)


def _gibbs_steps(job: SamplingJob) -> tuple[list[Any], list[dict[str, Any]]]:
    """The steps of :mod:`~cogtestbed.inference.hierarchical_gibbs` and each chain's dispersed start."""
    from cogtestbed.inference.hierarchical_gibbs import dispersed_starts, gibbs_steps

    steps = gibbs_steps(job.model, job.trials, job.pm_model, job.seed, job.target_accept)
    return steps, dispersed_starts(steps[0], job.chains, job.seed)


def _no_state(_job: SamplingJob) -> None:
    return None


#: The package's samplers.  ``gibbs`` is experimental: it stays only by the measured decision
#: of docs/benchmarks.md; ``auto`` never picks it.
NUTPIE = SamplerKind("nutpie", "NUTS of nutpie (Rust) on the numba-compiled log density; the default where "
                     "installed", "nutpie", _nutpie_key, _nutpie_sample, available=lambda: nutpie_available(),
                     compiled=lambda key: key in _COMPILED)
PYMC = SamplerKind("pymc", "PyMC's NUTS", "pymc", _no_state, _pymc_sample)
GIBBS = SamplerKind("gibbs", "EXPERIMENTAL: the package's Metropolis-within-Gibbs for centred models whose subjects "
                    "have several posterior modes (cogtestbed/inference/hierarchical_gibbs.py)", "cogtestbed",
                    _gibbs_steps, _pymc_sample, prepare=lambda model, trials, hierarchical: _all_centred(
                        model, trials, hierarchical), experimental=True)

#: Every sampler ``fit_hierarchical(..., sampler=NAME)`` runs: the package's (:data:`NUTPIE`, :data:`PYMC`,
#: :data:`GIBBS`), the ``cogtestbed.samplers`` entry points', those registered in the process.
SAMPLERS: Registry[SamplerKind] = Registry(
    "sampler", ENTRY_POINT_GROUP, lambda: {k.name: functools.partial(lambda k: k, k) for k in (NUTPIE, PYMC, GIBBS)},
    as_sampler)


def register_sampler(kind: SamplerKind) -> SamplerKind:
    """Register ``kind`` in this process under its name, so that ``fit_hierarchical(..., sampler=kind.name)``
    and every fit built on it run it; returns it (another sampler under a taken name is refused in one line)."""
    if not isinstance(kind, SamplerKind):
        raise TypeError(f"register_sampler takes a SamplerKind, got {type(kind).__name__}")
    return SAMPLERS.register(kind.name, kind)


def _mass_matrix_settings(model: Any) -> dict[str, bool]:
    """nutpie's mass-matrix settings for ``model``: low-rank where the model declares it (nutpie's
    estimate), else diagonal from the draws' variance (:data:`MASS_MATRIX_FROM_GRADIENTS`)."""
    if getattr(model, "low_rank_mass_matrix", False):
        return {"low_rank_modified_mass_matrix": True}
    return {"low_rank_modified_mass_matrix": False, "use_grad_based_mass_matrix": MASS_MATRIX_FROM_GRADIENTS}


def _more_draws_help(diag: Diagnostics) -> bool:
    """Whether a failed run failed only on ESS or R-hat (no divergence), which more draws can mend."""
    return not diag.ok and diag.divergences == 0


#: CPU seconds of compiling a model's ``numba.cfunc`` wrappers (what the Python path of
#: :func:`~cogtestbed.shims.nutpie_shim.python_model` avoids, and what a shape compiled before on the machine
#: loads from numba's disk cache instead: :mod:`~cogtestbed.shims.nutpie_cfunc`): 5.5-8.5 measured for nutpie's
#: on RW± 20 × 96 in fresh processes (docs/benchmarks.md); the project's round figure for the
#: choice below.
NATIVE_COMPILE_S = 6.0
#: Extra CPU seconds a leapfrog step (one log-density call) takes on the Python path: nutpie calls Python
#: from its sampling thread, Python calls PyTensor's numba function.  10.4 µs on RW 20 × 96 and 9.5 µs on
#: hyperbolic 20 × 40 (4 × (500 + 1000) on one thread, the same draws on both paths:
#: ``python benchmarks/bench_nutpie_compile.py CASE --paths``), whatever the call's own cost.
PYTHON_CALL_S = 10e-6
#: Leapfrog steps a draw the choice assumes before a run, taken high on purpose: about the 90th percentile
#: (68) of the mean steps of 80 recorded nutpie fits of 20 families (12-974, median 21;
#: ``benchmarks/studies/lowrank_per_family.py``'s runs).
STEPS_PER_DRAW = 64
#: The Python path's extra cost a shape may run up in a process before nutpie's model is compiled: half the
#: compile (the project's choice).  Where a run's estimate alone would pass it, the shape is compiled at once,
#: as every fit was before.  Measured with the whole compile as the limit (every first fit of the NumPyro
#: benchmark's 4 × (500 + 1000) on the Python path): the first data set's CPU was 0.81× to 1.46× the compiled
#: path's over 16 families (median 1.02) and the later data set's 1.07× to 3.76×, the compile often falling on it
#: (``benchmarks/studies/python_path_first_fit.py``, docs/benchmarks.md); at half, those fits are compiled at once.
PYTHON_RENT_LIMIT_S = NATIVE_COMPILE_S / 2


@dataclasses.dataclass
class _Compiled:
    """A model shape's nutpie models in this process: the Python path (built where it may pay), the
    natively compiled model once the Python path would cost too much (:func:`_nutpie_compiled`), and the
    seconds the Python path cost beyond the native one so far (``rent``: each run's counted steps)."""

    python: Any = None
    native: Any = None
    rent: float = 0.0
    #: the model's PyTensor functions (:func:`~cogtestbed.shims.nutpie_cfunc.model_functions`), built once for
    #: both paths
    funcs: Any = None

    def current(self) -> Any:
        return self.native if self.native is not None else self.python.model


_COMPILED: dict[Any, _Compiled] = {}


def _nutpie_compiled(pm_model: Any, key: tuple[Any, ...], job: SamplingJob | None = None, draws: int = 0) -> Any:
    """nutpie's model for :func:`_compiled_key` ``key``, reused across fits whose models share it.

    Two ways to one sampler and the same draws (:func:`~cogtestbed.shims.nutpie_shim.python_model`): the
    Python path calls PyTensor's NUMBA functions (cached on disk: about a second in a new process) from
    Python, :data:`PYTHON_CALL_S` more a leapfrog step and its chains one at a time (they hold the GIL);
    the native path is nutpie's compiled model with ``numba.cfunc`` wrappers numba caches on disk
    (:func:`~cogtestbed.shims.nutpie_cfunc.native_model`; nutpie's own ``compile_pymc_model`` where they cannot
    be built).  A shape whose wrappers a process on this machine compiled before is native from its first fit
    (they load in a few hundredths of a second).  Otherwise compiling them costs about :data:`NATIVE_COMPILE_S`
    CPU-seconds once, and a shape's fits take the Python path while its extra cost so far (the runs' counted
    steps) and the next run's estimate (:func:`_python_rent` at :data:`STEPS_PER_DRAW`) stay within
    :data:`PYTHON_RENT_LIMIT_S`; then the wrappers are compiled (and saved) and every later fit uses them (a run
    estimated past the limit on its own compiles at once, the Python path not built).  ``job`` None: the native
    model.  The choice changes times, never draws.

    The data live in ``pm.Data`` containers, so a cached model is pointed at the new arrays (and at the
    new lengths of the coordinates, where its graph reads them) with nutpie's ``with_data``: a recovery
    or SBC study refits one model to many data sets, an adaptive design or a table with invalid answers
    gives each data set its own number of observations.
    """
    fresh = key not in _COMPILED
    if fresh:
        if len(_COMPILED) > 8:
            _COMPILED.clear()
        _COMPILED[key] = _Compiled()
        if job is not None:  # a shape compiled before on this machine: its wrappers from numba's disk cache
            _COMPILED[key].native = _native(_COMPILED[key], pm_model, compile=False)
    entry = _COMPILED[key]
    if entry.native is None and not _python_pays(entry, pm_model, job, draws):
        # built from the functions of the shape's first model in the process: its data, re-pointed below
        entry.native = _native(entry, pm_model, compile=True)
    if fresh:
        return entry.current()
    from cogtestbed.shims.nutpie_shim import with_coords

    cached = entry.current()
    data = {d.name: d.get_value() for d in pm_model.data_vars}
    data.update({k: v.get_value() for k, v in pm_model.dim_lengths.items()
                 if hasattr(v, "get_value") and k not in data})
    compiled = cached.with_data(**{k: v for k, v in data.items() if k in _shared_names(cached)})
    # Coordinates (subject ids) come from the new model, not the cached one.
    coords = {**(cached.coords or {}), **{k: pd.Index(v) for k, v in pm_model.coords.items()}}
    return with_coords(compiled, coords)


def _python_pays(entry: _Compiled, pm_model: Any, job: SamplingJob | None, draws: int) -> bool:
    """Whether ``job``'s run of ``draws`` a chain takes the Python path (:func:`_nutpie_compiled`), building
    it where it has not been: the shape's rent so far and the run's estimate within the limit (the estimate's
    per-step part first, which needs no build)."""
    if job is None:
        return False
    steps = job.chains * (job.tune + draws) * STEPS_PER_DRAW
    if entry.rent + steps * PYTHON_CALL_S > PYTHON_RENT_LIMIT_S:
        return False
    if entry.python is None:
        from cogtestbed.shims.nutpie_shim import python_model

        entry.python = python_model(pm_model, entry.funcs)
    return entry.rent + _python_rent(entry.python, job, steps) <= PYTHON_RENT_LIMIT_S


def _native(entry: _Compiled, pm_model: Any, compile: bool) -> Any:
    """nutpie's compiled model with wrappers numba caches on disk (:func:`~cogtestbed.shims.nutpie_cfunc.native_model`):
    loaded where a process compiled the shape before, else compiled and saved (``compile``) or None; nutpie's own
    ``compile_pymc_model`` where the cached wrappers cannot be built (``compile``) or None (not ``compile``)."""
    from cogtestbed.shims import nutpie_cfunc

    if not nutpie_cfunc.problems():
        if entry.funcs is None:
            entry.funcs = nutpie_cfunc.model_functions(pm_model)
        model = nutpie_cfunc.native_model(pm_model, entry.funcs, compile=compile)
        if model is not None or not compile:
            return model
    if not compile:
        return None
    import nutpie

    return nutpie.compile_pymc_model(pm_model)


def _shared_names(compiled: Any) -> set[str]:
    """The data names a nutpie model's ``with_data`` takes (a compiled model's ``shared_data``, a Python
    path's ``_shared_data``)."""
    shared = getattr(compiled, "shared_data", None)
    return set(shared if shared is not None else compiled._shared_data)


def _python_rent(python: Any, job: SamplingJob, steps: float) -> float:
    """Wall seconds ``steps`` leapfrog steps of ``job`` take on the Python path beyond the native one:
    :data:`PYTHON_CALL_S` each, and the chains' share of the measured log-density cost that the native
    path would have spread over ``min(cores, chains)`` threads (none on one thread)."""
    threads = max(1, min(job.cores, job.chains))
    parallel = python.logp_seconds * (1 - 1 / threads) if threads > 1 else 0.0  # timed once, where it counts
    return steps * (PYTHON_CALL_S + parallel)


def _compiled_key(pm_model: Any, name: Any, hierarchical: bool) -> tuple[Any, ...]:
    """The key of a compiled model in :data:`_COMPILED`: models equal in it share one compilation.

    What a nutpie compilation fixes, and nothing else: the graph (the names and the free variables;
    a bare pm.Model has name "", and an optional ``cogtestbed_key`` set by the builder keeps pooling
    variants apart), the shapes of the variables it samples and stores (:func:`_stored_shapes`), every
    constant of the graph (:func:`_constant_digest`), and each ``pm.Data`` array's rank, dtype and
    which of its axes have length 1 (a broadcast pattern) but not its lengths: nutpie's compiled
    functions read each shared array's shape when called (``with_data`` checks only the rank), so a
    table with another number of observations (an adaptive design, invalid answers, belief cells)
    reuses the compilation (:func:`_nutpie_compiled`)."""
    data = {d.name: d.get_value() for d in pm_model.data_vars}
    return (name, hierarchical, getattr(pm_model, "cogtestbed_key", None),
            tuple(v.name for v in pm_model.free_RVs),
            tuple(sorted((k, v.ndim, tuple(n == 1 for n in v.shape), str(v.dtype)) for k, v in data.items())),
            _stored_shapes(pm_model),
            _constant_digest(pm_model))


def _stored_shapes(pm_model: Any) -> tuple[Any, ...]:
    """The shapes of the variables nutpie samples and stores, as its compilation computes and fixes
    them (a subject count, a cell count); with a nutpie that computes them otherwise, the lengths of
    every data array and coordinate (no reuse across observation counts)."""
    from cogtestbed.shims.nutpie_shim import stored_shapes

    shapes = stored_shapes(pm_model)
    if shapes is None:  # pragma: no cover - another nutpie
        return (tuple(sorted((d.name, d.get_value().shape) for d in pm_model.data_vars)),
                tuple(sorted((k, len(v)) for k, v in pm_model.coords.items())))
    return tuple(sorted((k, tuple(int(n) for n in np.atleast_1d(v))) for k, v in shapes.items()))


def _kind_name(model: Any, pm_model: Any) -> str:
    """A model's name for the sampling cost model (a bare pm.Model: its free variables)."""
    name = getattr(model, "name", "") or ""
    return name if name else ",".join(sorted(v.name for v in pm_model.free_RVs))[:120]


def _n_observed(pm_model: Any) -> int:
    """Observations of the model (the data a gradient evaluation visits): the longest data array,
    ``pm.Data`` or observed constant; at least 1."""
    sizes = [int(np.size(d.get_value())) for d in pm_model.data_vars]
    for rv in pm_model.observed_RVs:
        data = getattr(pm_model.rvs_to_values.get(rv), "data", None)
        if data is not None:
            sizes.append(int(np.size(data)))
    return max([1, *sizes])


def _constant_digest(pm_model: Any) -> str:
    """SHA-256 of every constant of the model's log density and stored variables, each with its
    dtype and shape: observed and index arrays given as numpy rather than ``pm.Data``, and numbers a
    builder wrote into the graph (a subject count in ``pt.ones(n)``, where no sampled variable has
    that length): ``with_data`` cannot re-point those, so they must be part of the key."""
    import hashlib

    from pytensor.graph.basic import Constant
    from pytensor.graph.traversal import ancestors

    outputs = [pm_model.logp(), *pm_model.observed_RVs, *pm_model.deterministics, *pm_model.free_RVs]
    digest = hashlib.sha256()
    for var in ancestors(outputs):
        if isinstance(var, Constant):
            data = var.data
            if isinstance(data, np.ndarray | np.generic):
                digest.update(f"{data.dtype}{data.shape};".encode())
                digest.update(np.ascontiguousarray(data).tobytes())
            else:
                digest.update(f"{type(data).__name__}:{data!r};".encode())
    return digest.hexdigest()


def _add_constant_data(idata: Any, pm_model: Any) -> None:
    """Store the model's ``pm.Data`` (e.g. ``obs_subject``) in ``constant_data`` (nutpie omits it)."""
    import xarray as xr

    if "constant_data" in idata.groups():
        return
    dims = pm_model.named_vars_to_dims
    ds = xr.Dataset({d.name: (dims.get(d.name, [f"{d.name}_dim_{i}" for i in range(d.ndim)]),
                              d.get_value()) for d in pm_model.data_vars})
    idata.add_groups(constant_data=ds)


class _quiet_pymc:
    """Silence PyMC's per-fit INFO logging (sampler banner) inside studies."""

    def __enter__(self) -> None:
        self._logger = logging.getLogger("pymc")
        self._level = self._logger.level
        self._logger.setLevel(logging.WARNING)

    def __exit__(self, *exc: Any) -> None:
        self._logger.setLevel(self._level)
