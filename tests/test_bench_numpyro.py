"""The NumPyro benchmark's package side (issue 54 item 1): the spec it hands to NumPyro's environment,
the padding the sequential NumPyro likelihoods read, and its refusals.  NumPyro itself is not installed
here (it lives in ``.venv-numpyro``), so the fits are not run."""

from __future__ import annotations

import importlib.util
import json
import resource
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _load(name: str) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    if name == "numpyro_models":  # it imports its sibling as a top-level module (the script's folder)
        _load("numpyro_families")
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_padded_blocks_subjects_in_order() -> None:
    models = _load("numpyro_models")
    idx = np.array([0, 0, 1, 2, 2, 2])
    out = models.padded(idx, {"x": np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])}, 3)
    np.testing.assert_array_equal(out["x"], [[1.0, 2.0, 0.0], [3.0, 0.0, 0.0], [4.0, 5.0, 6.0]])
    np.testing.assert_array_equal(out["mask"], [[True, True, False], [True, False, False], [True, True, True]])


def test_spec_carries_the_package_model(tmp_path: Path) -> None:
    bench = _load("bench_hierarchical_vs_numpyro")
    models = _load("numpyro_models")
    case = bench.Case("instrumental-learning", "rw", "rw-pm", subjects=3, direct=True)
    data = bench.tables(case, 1)
    sampler = {"chains": 2, "draws": 10, "tune": 10, "seeds": [0], "target_accept": 0.9}
    ours = bench.write_spec(case, data, tmp_path / "spec.npz", sampler)
    spec = np.load(tmp_path / "spec.npz")
    meta = json.loads(str(spec["meta"]))
    assert meta["columns"] == ["alpha", "alpha", "beta"]
    assert [(p["name"], p["transform"], p["prior_mean"], p["prior_sd"]) for p in meta["parameters"]] == [
        ("alpha", "logit", -1.0, 1.5), ("beta", "log", 1.5, 1.0)]
    assert meta["static"] == {"n_casinos": 4} and meta["sd_scale"] == 0.5 and ours["trials"] == 96
    # the padded blocks NumPyro's RW± scan reads are each subject's valid trials, in table order
    blocks = models.padded(spec["r0_obs_subject"], {"action": spec["r0_action"]}, 3)
    table = data[0].sort_values(["subject", "trial"], kind="stable")
    first = table[table["subject"] == table["subject"].iloc[0]]
    np.testing.assert_array_equal(blocks["action"][0], first["action"].to_numpy(dtype=np.int64))
    assert spec["check_theta"].shape == (3, 3, 3)
    np.testing.assert_array_equal(spec["check_theta"][:, :, 0], spec["check_theta"][:, :, 1])  # α, α
    assert all(np.isfinite(ours["check_logp"])) and all(v < 0 for v in ours["check_loglik"])


def test_refusals_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench = _load("bench_hierarchical_vs_numpyro")
    assert bench.main(["--cases", "nope", "--numpyro-python", str(tmp_path / "python")]) == 2
    assert bench.main(["--cases", "rw-pm", "--numpyro-python", str(tmp_path / "python")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "unknown: ['nope']" in err[0] and "make bench-numpyro" in err[1]


def test_every_hierarchical_model_has_a_case() -> None:
    """Every model with a PyMC version (what ``ct.fit(..., method="hierarchical")`` samples) is benchmarked."""
    from cogtestbed.registry import experiment_names, get_experiment

    bench = _load("bench_hierarchical_vs_numpyro")
    cases = {(c.experiment, c.model) for c in bench.CASES.values()}
    fitted = set()
    for name in experiment_names():
        exp = get_experiment(name)
        fitted |= {(name, m) for m in exp.models if exp.model(m).has_pymc}
    assert fitted - cases == set()
    assert len(fitted) == 20


@pytest.mark.parametrize("case", ["belief-mnl", "collider-3p", "revealed-dissonant"])
def test_pooling_is_the_pymc_models(case: str) -> None:
    """The arrays handed to NumPyro are the ones the package's own PyMC model holds (its ``pm.Data``)."""
    import dataclasses

    from cogtestbed.registry import get_experiment

    bench = _load("bench_hierarchical_vs_numpyro")
    c = dataclasses.replace(bench.CASES[case], subjects=3)
    table = bench.tables(c, 1)[0]
    model = get_experiment(c.experiment).model(c.model)
    subjects, rows, arrays = bench.pooled_arrays(c, model, table)
    pm_model = model.pymc_model(table)
    data = {d.name: d.get_value() for d in pm_model.data_vars}
    np.testing.assert_array_equal(rows, data["obs_cell" if case == "revealed-dissonant" else "obs_subject"])
    if case == "collider-3p":
        np.testing.assert_array_equal(arrays["y"], data["y_data"])
        assert bench.case_columns(c, model) == ["b", "m", "m", "p_c"]
    elif case == "belief-mnl":
        for name in ("n_no", "n_yes", "n_defer", "p"):
            np.testing.assert_array_equal(arrays[name], data[name])
        decisions = arrays["n_no"] + arrays["n_yes"] + arrays["n_defer"]
        assert decisions.sum() > len(rows)  # one row per distinct belief holds several decisions
    else:
        np.testing.assert_array_equal(arrays["feat"], data["feat"])
        meta = bench.scenario_meta(c, model, [table])
        assert meta["n_scenarios"] == 4 and set(meta["scenario_pooling"]) <= {
            "beta_first", "beta_anchor", "beta_round", "beta_mid"}
    assert len(subjects) == 3


def _started(rep: int, cpu_s: float) -> str:
    """The stand-in's line for ``numpyro_models.py``'s "data set ``rep`` started at ``cpu_s`` CPU-s"."""
    return f"print(json.dumps({{'started': {rep}, 'process_cpu_s': {cpu_s}, 'numpyro': 'x', 'jax': 'y'}}), flush=True)"


def _fake_numpyro(tmp_path: Path, *lines: str) -> Path:
    """A stand-in for NumPyro's Python: a script of ``lines`` run by this interpreter (``numpyro_models.py``'s
    progress lines are JSON; ``json``, ``os`` and ``signal`` are imported)."""
    fake = tmp_path / "python"
    fake.write_text("\n".join(["#!" + sys.executable, "import json, os, signal", *lines]) + "\n")
    fake.chmod(0o755)
    return fake


@pytest.mark.timeout(120)
def test_numpyro_cpu_limit_keeps_the_finished_fits(tmp_path: Path) -> None:
    """A NumPyro process stopped by ``--numpyro-cpu-limit`` (the kernel's SIGXCPU) leaves the fits that
    finished and a lower bound of the CPU of the one it was in; a stand-in for NumPyro's Python prints the
    same progress lines as ``numpyro_models.py`` and then spins."""
    bench = _load("bench_hierarchical_vs_numpyro")
    fake = _fake_numpyro(tmp_path,
                         _started(0, 0.2),
                         "print(json.dumps({'finished': {'rep': 0, 'cpu_s': 0.3, 'wall_s': 0.3}}), flush=True)",
                         _started(1, 0.5),
                         "while True:\n    pass")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = bench.fit_numpyro(fake, tmp_path / "spec.npz", tmp_path / "draws.npz", cpu_limit=1)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert out["fits"] == [{"rep": 0, "cpu_s": 0.3, "wall_s": 0.3}]
    # the CPU the stand-in used (about 1 s; the kernel's tick-sampled limit check has stopped it at 0.76 s
    # of this clock), less the 0.5 s its line says it had used when data set 1 began
    used = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    assert out["unfinished"] == {"rep": 1, "cpu_s_at_least": pytest.approx(used - 0.5, abs=1e-9)}
    assert out["numpyro"] == "x"
    rows = bench.numpyro_rows({**out, "fits": []}, tmp_path / "none.npz", 10.0, 3)
    assert rows == [{"unfinished": True, "cpu_s": out["unfinished"]["cpu_s_at_least"], "grad_us": 10.0},
                    {"not_started": True}, {"not_started": True}]


@pytest.mark.timeout(120)
def test_numpyro_cpu_limit_holds_where_the_kernel_does_not_enforce_it(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``RLIMIT_CPU`` not set (a kernel that does not enforce it: this project's sandbox on 28 Nov 2026 let a
    NumPyro process run past its limit), the watchdog stops the process at the limit all the same."""
    bench = _load("bench_hierarchical_vs_numpyro")
    monkeypatch.setattr(bench.resource, "setrlimit", lambda *args: None)  # the child's preexec sets nothing
    monkeypatch.setattr(bench, "WATCH_S", 0.2)
    fake = _fake_numpyro(tmp_path,
                         _started(0, 0.1),
                         "while True:\n    pass")
    out = bench.fit_numpyro(fake, tmp_path / "spec.npz", tmp_path / "draws.npz", cpu_limit=1)
    assert out["fits"] == [] and out["unfinished"]["rep"] == 0
    assert 0.8 <= out["unfinished"]["cpu_s_at_least"] + 0.1 < 5
    assert bench.process_cpu_s(-1) is None


def test_a_stop_between_two_fits_leaves_no_unfinished_fit() -> None:
    """Stopped after data set 0's ``finished`` line and before data set 1's ``started`` (or after the last
    fit): data set 0 is finished, not also unfinished, and no data set gets a CPU bound holding another's fit."""
    bench = _load("bench_hierarchical_vs_numpyro")
    lines = [{"started": 0, "process_cpu_s": 5.0, "numpyro": "x", "jax": "y"},
             {"finished": {"rep": 0, "cpu_s": 90.0, "wall_s": 90.0}}]
    out = bench.stopped_at_limit(lines, 100.0)
    assert out == {"numpyro": "x", "jax": "y", "fits": [{"rep": 0, "cpu_s": 90.0, "wall_s": 90.0}]}
    rows = bench.numpyro_rows({**out, "fits": []}, Path("none.npz"), 10.0, 2)
    assert rows == [{"not_started": True}, {"not_started": True}]
    later = bench.stopped_at_limit([*lines, {"started": 1, "process_cpu_s": 95.5, "numpyro": "x", "jax": "y"}], 100.0)
    assert later["unfinished"] == {"rep": 1, "cpu_s_at_least": 4.5}


def test_a_process_killed_before_its_cpu_limit_is_a_failure_not_a_stop(tmp_path: Path) -> None:
    """SIGKILL from elsewhere (the out-of-memory killer) well before the CPU limit: refused, no lower bound."""
    bench = _load("bench_hierarchical_vs_numpyro")
    fake = _fake_numpyro(tmp_path,
                         _started(0, 0.1),
                         "os.kill(os.getpid(), signal.SIGKILL)")
    with pytest.raises(RuntimeError, match=r"failed \(-9\)"):
        bench.fit_numpyro(fake, tmp_path / "spec.npz", tmp_path / "draws.npz", cpu_limit=60)


def test_ratio_bounds_and_their_table_row() -> None:
    """NumPyro stopped after 1,000 CPU-s of 4 × 500 draws: its bulk ESS is at most 2000 · log10(2000) (ArviZ's
    floor on the autocorrelation time), so a package at 2 ESS per CPU-second is above 2 · 1000 / 6602 ×."""
    bench = _load("bench_hierarchical_vs_numpyro")
    package = {"min_ess_bulk": 200.0, "min_ess_tail": 150.0, "cpu_s": 100.0, "max_rhat": 1.004, "divergences": 0}
    row = {"case": "c", "experiment": "e", "model": "m", "rep": 0, "subjects": 6, "trials": 248, "chains": 4,
           "draws": 500, "tune": 500, "same_model": True, "package": bench._rates(package),
           "numpyro": bench._rates({"unfinished": True, "cpu_s": 1000.0})}
    bounds = bench.ratio_bounds(row)
    assert bounds["ratio_at_least"] == pytest.approx(2.0 * 1000.0 / (2000 * np.log10(2000)))
    assert bounds["ratio_at_least_if_ess_at_most_draws"] == pytest.approx(1.0)
    line = bench.table([{**row, **bounds}]).splitlines()[2]
    assert "unfinished after 1000 CPU-s" in line and "**> 0.30×**" in line and "1.004 / –" in line
    later = {**row, "rep": 1, "numpyro": {"not_started": True}}
    assert "not begun (CPU limit)" in bench.table([later]).splitlines()[2]


def test_cpu_limit_must_be_positive(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench = _load("bench_hierarchical_vs_numpyro")
    assert bench.main(["--cases", "rw-pm", "--numpyro-cpu-limit", "0", "--numpyro-python", str(tmp_path)]) == 2
    assert "--numpyro-cpu-limit > 0" in capsys.readouterr().err


@pytest.mark.parametrize("case", ["hyperbolic", "collider-3p"])
def test_a_later_first_data_set_is_the_same_table(case: str) -> None:
    """``--first-data-set K`` fits the data sets K, K + 1, … that ``--reps K + n`` would have fitted (fresh
    seeds for a comparison chosen on the first K), the collider's nuisance draws included."""
    bench = _load("bench_hierarchical_vs_numpyro")
    import dataclasses

    small = dataclasses.replace(bench.CASES[case], subjects=3)
    all_three = bench.tables(small, 3)
    later = bench.tables(small, 2, first=1)
    for a, b in zip(all_three[1:], later, strict=True):
        assert a.equals(b)
    assert not all_three[0].equals(later[0])


def test_first_data_set_is_refused_below_zero(capsys: pytest.CaptureFixture[str]) -> None:
    """A negative first data set is refused; a later one is allowed with NumPyro too (a later data set's ratio
    without refitting data set 0)."""
    bench = _load("bench_hierarchical_vs_numpyro")
    assert bench.main(["--cases", "rw-pm", "--first-data-set", "-1", "--package-only"]) == 2
    assert "--first-data-set >= 0" in capsys.readouterr().err


def test_the_two_mass_matrix_settings_are_refused_together(capsys: pytest.CaptureFixture[str]) -> None:
    bench = _load("bench_hierarchical_vs_numpyro")
    assert bench.main(["--cases", "rw", "--package-only", "--low-rank-mass-matrix", "--diagonal-mass-matrix"]) == 2
    assert "at most one of --low-rank-mass-matrix and --diagonal-mass-matrix" in capsys.readouterr().err


def _study(name: str = "lowrank_per_family") -> ModuleType:
    """A study script of ``benchmarks/studies``, loaded afresh."""
    spec = importlib.util.spec_from_file_location(name, BENCH / "studies" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _row(rate: float, rhat: float = 1.005, div: int = 0) -> dict[str, float]:
    return {"ess_per_cpu_s": rate, "max_rhat": rhat, "divergences": div, "min_ess_bulk": 500.0, "cpu_s": 10.0,
            "mean_steps": 15.0}


def test_the_low_rank_rule_needs_both_fresh_data_sets() -> None:
    study = _study()
    assert study.holds(_row(10.0), _row(10.0)) and not study.holds(_row(10.0), _row(9.9))
    assert not study.holds(_row(10.0), _row(20.0, rhat=1.0101)) and not study.holds(_row(10.0), _row(20.0, div=1))
    assert study.holds(_row(10.0, div=3), _row(20.0, div=3))

    def out(*rows: dict[str, float]) -> str:
        return "\n".join(json.dumps({"case": "x", "rep": 2 + k, **r}) for k, r in enumerate(rows))

    both = {("a", "diag"): out(_row(10.0), _row(10.0)), ("a", "lowrank"): out(_row(11.0), _row(12.0)),
            ("b", "diag"): out(_row(10.0), _row(10.0)), ("b", "lowrank"): out(_row(30.0), _row(9.0))}
    rows, switched = study.study(both)
    assert switched == ["a"] and [r[-1] for r in rows] == ["holds", "holds", "holds", "fails"]


def test_the_models_declaring_the_low_rank_mass_matrix_are_the_studys_choice() -> None:
    """The models that declare nutpie's low-rank mass matrix are belief coherence's loss form (issue 54) and the
    families the per-family rule chose on fresh data sets (the committed record); a change of either without the
    other fails here."""
    from cogtestbed.registry import get_experiment

    bench, record = _load("bench_hierarchical_vs_numpyro"), (BENCH / "studies" / "results" / "lowrank-per-family.json")
    notes = json.loads(record.read_text(encoding="utf-8"))["notes"]
    chosen = notes.rsplit("the rule takes the low-rank mass matrix for: ", 1)[1].split(", ")
    declared = {name for name, c in bench.CASES.items()
                if get_experiment(c.experiment).model(c.model).low_rank_mass_matrix}
    assert declared == {*chosen, "belief-loss"}
    assert set(chosen) == {"rw", "hyperbolic", "expected-value", "magnitude-kalman"}


def test_a_target_acceptance_outside_its_range_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    bench = _load("bench_hierarchical_vs_numpyro")
    for bad in ("1.0", "0.3"):
        assert bench.main(["--cases", "rw", "--package-only", "--target-accept", bad]) == 2
        assert "--target-accept in [0.5, 1)" in capsys.readouterr().err


def test_the_target_acceptance_rule_needs_fewer_divergences_over_four_data_sets() -> None:
    study = _study("target_accept_per_family")

    def fitted(*divs: int, rhat: float = 1.005) -> dict[int, dict[str, float]]:
        return {2 + k: _row(10.0, rhat=rhat, div=d) for k, d in enumerate(divs)}

    assert study.takes_higher(fitted(0, 3, 0, 1), fitted(0, 2, 0, 1))
    assert not study.takes_higher(fitted(0, 0, 0, 0), fitted(0, 0, 0, 0))  # nothing to remove
    assert not study.takes_higher(fitted(0, 1, 0, 0), fitted(1, 0, 0, 0))  # no fewer
    assert not study.takes_higher(fitted(0, 3, 0, 1), fitted(0, 0, 0, 0, rhat=1.0101))  # R-hat
    assert not study.takes_higher(fitted(0, 3, 0), fitted(0, 0, 0))  # a data set missing

    def out(*divs: int) -> str:
        return "\n".join(json.dumps({"case": "x", "rep": 2 + k, **_row(10.0, div=d)}) for k, d in enumerate(divs))

    rows, switched = study.study({("a", "0.9"): out(1, 0, 0, 0), ("a", "0.95"): out(0, 0, 0, 0),
                                  ("b", "0.9"): out(0, 0, 0, 0), ("b", "0.95"): out(0, 0, 0, 0)})
    assert switched == ["a"] and [r[-1] for r in rows if r[1] == "divergences, all"] == ["takes 0.95", "takes 0.9"]


def test_the_models_declaring_target_acceptance_095_are_the_studys_choice() -> None:
    """Of the families the per-family study compared, those that declare target acceptance 0.95 are the ones its
    rule chose on fresh data sets (the committed record); the others keep the default (no attribute)."""
    from cogtestbed.registry import get_experiment

    bench, study = _load("bench_hierarchical_vs_numpyro"), _study("target_accept_per_family")
    record = BENCH / "studies" / "results" / "target-accept-per-family.json"
    notes = json.loads(record.read_text(encoding="utf-8"))["notes"]
    chosen = set(notes.rsplit("the rule takes target acceptance 0.95 for: ", 1)[1].split(", "))
    declared = {name: get_experiment(bench.CASES[name].experiment).model(bench.CASES[name].model).target_accept
                for name in study.CASES}
    assert {name for name, t in declared.items() if t == 0.95} == chosen == {"horizon", "two-step-model-free"}
    assert all(t is None for name, t in declared.items() if name not in chosen)


def test_family_rows_pair_the_loaded_first_fit_with_numpyros_data_set_0(capsys: pytest.CaptureFixture[str]) -> None:
    rows = _study("family_rows")
    full = "\n".join(json.dumps({"case": "c", "rep": k, "package": _row(p, rhat=r, div=d), "numpyro": _row(n)})
                     for k, (p, n, r, d) in enumerate([(10.0, 4.0, 1.005, 0), (40.0, 5.0, 1.02, 0)]))
    loaded = json.dumps({"case": "c", "rep": 0, **_row(20.0)})
    out = rows.rows_of("c", "not a row\n" + full, loaded)
    assert [(r[1], r[4], r[-1]) for r in out] == [("0 (compiled)", "2.50x", "no"), ("0 (loaded)", "5.00x", "yes"),
                                                  ("1", "8.00x", "no")]  # data set 1: the package's R-hat 1.02
    assert rows.main([]) == 2 and "give --cases" in capsys.readouterr().err
