"""A fit written to a folder (``cogtestbed fit``): :func:`fit_and_save` fits a model to a trial
file as :func:`cogtestbed.fit` does (the same checks, :func:`~cogtestbed.api.core.fit_model` and
:func:`~cogtestbed.api.core.fit_table`) and writes the MLE table, or the posterior (netCDF), the
per-subject summary and the diagnostics, with ``summary.json``; it returns that summary."""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from cogtestbed.api.checks import model_first, public
from cogtestbed.request import api_values, build, derive_api, keyword, request_block
from cogtestbed.studies.study_options import FitRequest

#: netCDF encoding of every numeric variable of ``posterior.nc``: zlib (deflate) level 4 after the
#: HDF5 byte-shuffle filter, which groups the similar exponent bytes of float draws together.
POSTERIOR_ENCODING = {"zlib": True, "complevel": 4, "shuffle": True}


def _quiet(_: str) -> None:
    """The default ``say``: progress notes are dropped."""


@public(paths=('path',), legacy=model_first("model", data="path"))
@derive_api(FitRequest, after=(keyword("say", _quiet, Callable[[str], None]),))
def fit_and_save(experiment: str | None, path: str | os.PathLike[str], model: str, **options: Any) -> dict[str, Any]:
    """Fit ``model`` to the trial table or published data file ``path`` and write the fit to the
    folder ``output`` (``cogtestbed fit``; ``force`` overwrites its files); return the summary it
    writes as ``summary.json`` (model, source, units: ``unit``, ``n_units`` (= ``n_subjects``) and
    ``unit_reason``, chosen by ``unit`` as :func:`cogtestbed.fit` does; MLE: the parameters' means, summed
    AIC and BIC over the subjects whose answers identify the model, a flag naming the others;
    hierarchical: the population medians and 90 % intervals, diagnostics, LOO, sampled on the
    subjects whose answers identify the model (``n_identified``; ``unidentified`` names the others
    with the reason, ``flags`` says so, and their rows of ``subjects.csv`` are null; a table where
    none is identified is refused); on a table run
    across prompt forms, the crossed subject × form model on ``form_effects`` (default: every
    parameter) and each between-form SD's posterior, ``form_sd``, and each form's effect); its
    ``request``: the options it was given (:func:`cogtestbed.request.request_block` of the
    :class:`~cogtestbed.studies.study_options.FitRequest`).

    ``experiment``: None, the table's experiment column, else the one experiment declaring
    ``model`` (the argument order of :func:`cogtestbed.fit`; the earlier call form
    ``fit_and_save(MODEL, PATH, output=..., experiment=...)`` still works).  Files: ``mle.csv`` (MLE,
    one row per subject, equal to :func:`cogtestbed.fit`'s table), or ``posterior.nc``,
    ``subjects.csv``, ``diagnostics.csv`` (hierarchical).  ``say`` receives the progress notes
    (sampling started, diagnostics); ``sessions`` as
    :func:`cogtestbed.metrics`'s (``split``: a run of a file without trial key that judges a
    condition again holds another session; default: such a file is refused).

    Returns
    -------
    dict
        The summary written as ``summary.json`` beside the fit's files in ``output``.

    Examples
    --------
    >>> import cogtestbed as ct
    >>> ct.simulate_file("instrumental-learning", "rw-pm", subjects=2, seed=1, output="trials.parquet")
    192
    >>> summary = ct.fit_and_save("instrumental-learning", "trials.parquet", "rw-pm", method="mle", output="fit")
    >>> summary["model"], summary["method"]
    ('rw-pm', 'mle')
    """
    from cogtestbed.api.core import fit_model, fit_table, get_experiment, with_units
    from cogtestbed.inference.base import invalid_rate, mle_summary
    from cogtestbed.outputs import atomic_write_bytes, output_dir
    from cogtestbed.registry import experiment_of

    req = build(FitRequest, {**options, "experiment": experiment, "path": path, "model": model})
    o = api_values(req)
    (output, method, source, unit, separate_runs, draws, max_draws, chains, log_likelihood, seed, lapse, force,
     form_effects, sessions) = (o[k] for k in ("output", "method", "source", "unit", "separate_runs", "draws",
                                                "max_draws", "chains", "log_likelihood", "seed", "lapse", "force",
                                                "form_effects", "sessions"))
    if isinstance(form_effects, str):  # the command line's P1,P2,...
        form_effects = form_effects.split(",")
    say = options.get("say", _quiet)
    exp = get_experiment(experiment_of(experiment, path, model))
    cog = fit_model(exp, model, method, lapse)
    out = Path(output)
    with output_dir(out, force):
        table, detected, units = fit_table(exp, Path(path), source, unit, sessions, separate_runs)
        payload: dict[str, Any] = {"model": model, "path": str(path), "source": detected,
                                   "n_subjects": units.n_units, "method": method, **units.as_dict()}
        if lapse != "none":  # the lapse term models random answers; invalid ones are a binomial rate
            payload.update({"lapse": lapse, "invalid_rate": invalid_rate(table)})
        if method == "mle":
            fits = with_units(cog.fit_identified(table), table, units)
            dest = out / "mle.csv"
            atomic_write_bytes(dest, lambda tmp: fits.to_csv(tmp, index=False))
            from cogtestbed.inference.summary import known_bias

            bias = known_bias(exp.name, model, cog.parameters)
            payload.update({"files": [str(dest)], **mle_summary(fits, cog.parameters.names, cog.parameters, bias)})
        else:
            payload.update(_hierarchical(cog, table, out, draws, chains, seed, payload["n_subjects"], log_likelihood,
                                         max_draws, say, form_effects))
        payload["request"] = fit_request_block(req, method)
        summary = out / "summary.json"
        atomic_write_bytes(summary, lambda tmp: tmp.write_text(json.dumps(payload, indent=1, default=str)))
    say(units.line())
    return payload


#: Sub-objects of a fit's request that only a posterior uses (draws, chains, seed; the pointwise log-likelihood).
SAMPLING_BLOCKS = ("sampling", "posterior")


def fit_request_block(req: Any, method: str) -> dict[str, Any]:
    """A fit's options as given, as ``summary.json`` records them (the command line's and ``ct.``'s alike,
    :func:`cogtestbed.request.request_block`); an MLE fit leaves out :data:`SAMPLING_BLOCKS`, which a point
    estimate does not use."""
    block = request_block(req)
    if method == "mle":
        for name in SAMPLING_BLOCKS:
            block.pop(name, None)
    return block


def write_posterior(idata: Any, path: Path, log_likelihood: bool = False) -> Path:
    """Write ``idata`` as compressed netCDF (one group per InferenceData group, atomically).

    The pointwise ``log_likelihood`` group (chains x draws x observations, most of the file) is
    written only when asked for.
    """
    import numpy as np

    from cogtestbed.outputs import atomic_write_bytes
    from cogtestbed.trials import package_versions

    groups = [g for g in idata.groups() if log_likelihood or g != "log_likelihood"]
    versions = {f"version_{name}": version for name, version in package_versions().items()}

    def write(tmp: Path) -> None:
        mode = "w"
        for group in groups:
            data = getattr(idata, group).assign_attrs(versions)  # a copy: idata is left as it is
            encoding = {name: dict(POSTERIOR_ENCODING) for name, var in data.variables.items()
                        if np.issubdtype(var.dtype, np.number) and var.ndim > 0}
            data.to_netcdf(str(tmp), mode=mode, group=group, engine="h5netcdf", encoding=encoding)
            mode = "a"

    atomic_write_bytes(path, write)
    return path


def _hierarchical(cog: Any, table: Any, output: Path, draws: int, chains: int, seed: int, n_subjects: int,
                  log_likelihood: bool, max_draws: int | None, say: Callable[[str], None],
                  form_effects: Sequence[str] | None = None) -> dict[str, Any]:
    """Sample the hierarchical model (with crossed form effects where the table has forms), write its
    files; the summary's population, diagnostics and LOO (and the form SDs' posteriors)."""
    from cogtestbed.api.core import sample_hierarchical
    from cogtestbed.inference.form_hierarchical import has_forms
    from cogtestbed.inference.hierarchical import loo
    from cogtestbed.outputs import atomic_write_bytes

    forms = has_forms(table)

    def started(kept: Any) -> None:
        n = int(kept["subject"].nunique())
        say(f"sampling {cog.name} on {n} subjects" + (f" (of {n_subjects})" if n != n_subjects else "")
            + f" ({chains} chains x {draws} draws)" + (" with crossed prompt-form effects" if forms else "") + "...")

    res = sample_hierarchical(cog, table, form_effects, draws=draws, chains=chains, seed=seed, max_draws=max_draws,
                              on_start=started)
    say(f"diagnostics: {res.diagnostics.report()}")
    for p, s in (res.form_sd or {}).items():
        say(f"between-form SD of {p} (unconstrained scale): {s['median']:.3g} [{s['interval'][0]:.3g}, "
            f"{s['interval'][1]:.3g}] ({s['level']:.0%} posterior), R-hat {s['r_hat']:.3f}, ESS {s['ess_bulk']:.0f}")
    nc = write_posterior(res.idata, output / "posterior.nc", log_likelihood)
    post = res.idata.posterior
    pop = {p: _interval(post[f"{p}_pop"]) for p in cog.parameters.names}
    for cname in cog.contrasts:
        pop[cname] = _interval(cog.contrast(cname, {p: post[f"{p}_pop"] for p in cog.parameters.names}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lo = loo(res)
    subj = res.subject_summary()
    subjects_csv = output / "subjects.csv"
    atomic_write_bytes(subjects_csv, lambda tmp: subj.to_csv(tmp, index=False))
    atomic_write_bytes(output / "diagnostics.csv", lambda tmp: res.diagnostics.table.to_csv(tmp))
    out = {"population": pop, "diagnostics": res.diagnostics.as_dict(), "elpd_loo": float(lo.elpd_loo),
           "files": [str(nc), str(subjects_csv)], "n_identified": n_subjects - len(res.unidentified),
           "unidentified": {str(s): r for s, r in res.unidentified.items()}, "flags": list(res.flags)}
    if res.form_sd is not None:
        out.update({"form_sd": res.form_sd, "form_effects": res.form_effects})
    return out


def _interval(draws: Any) -> dict[str, float]:
    """Median and 90 % interval of posterior draws."""
    return {"median": float(draws.median()), "lo90": float(draws.quantile(0.05)),
            "hi90": float(draws.quantile(0.95))}
