"""Issue 41's reproductions, replayed through the command line: each prints what the command says
now (exit status and its one line, or the numbers it reports).

    PYTHONPATH=. python benchmarks/studies/hard_edges_round3.py

* a relabelled run of CogBench's InstrumentalLearning/gpt-4.csv (run 1 → run 0): was 9 runs,
  performance .5995, exit 0; now refused naming run and trial, exit 2;
* declared bounds: horizon info-bonus at temperature_h1 = 0, magnitude observer at prior_sd,
  sigma_text, sigma_image = 0 and 1e-300 (were ZeroDivisionError tracebacks);
* a collider table whose every valid answer is 100 (was b = 1.0, p_c = 1.0, MAE 3.7e-6): the flag
  and the null parameters;
* a large input: RestlessBandit/random.csv (2.2 MiB) under COGTESTBED_MAX_INPUT_MB=1: the one-line
  refusal with the estimate, the limit and the override;
* constant answers in every experiment (two simulated subjects, every valid answer set to one
  value, as the conformance check ``constant_answers`` does): the flag, the metrics made null, and
  how many subjects each model's ``fit`` identifies (0 of 2 everywhere);
* ProbabilisticReasoning/claude-1.csv and claude-2.csv (runs that judge a condition twice): the
  default refusal (exit 2, one line naming file, run, condition and override), and under
  ``--sessions split`` the runs holding a second session (215 and 2);
* hierarchical fits of degenerate answers: a table whose every valid answer is one value is refused
  (exit 2, one line); with one constant subject of three, the fit samples the other two and
  names the third (``n_identified``, ``unidentified``, ``flags``; null rows in subjects.csv);
* belief coherence's single-test path on constant answers: the raw test alone (what the studies
  read before) and ``MetricsSpec.test_result`` (null with the reason, as the whole metrics);
* progress during a long metrics computation: ``metrics --json`` on 2,000 simulated
  instrumental-learning runs, its stderr lines and the count the result holds.

``--quick`` leaves out the hierarchical fit and the long metrics computation.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "cogbench"


def cogtestbed(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cogtestbed", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, check=False)


def said(result: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in result.stderr.splitlines() if line.startswith(("error:", "Traceback"))]
    return f"exit {result.returncode}: {lines[-1] if lines else '(no error line)'}"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        df = pd.read_csv(DATA / "InstrumentalLearning" / "gpt-4.csv", encoding="utf-8-sig")
        df.loc[df["run"] == 1, "run"] = 0
        relabelled = Path(tmp) / "gpt-4.csv"
        df.to_csv(relabelled, index=False)
        print("relabelled run:", said(cogtestbed("metrics", "instrumental-learning", str(relabelled))))
        cases = [("horizon", "info-bonus", "temperature_h1=0")]
        cases += [("magnitude", "observer", f"{p}={v}") for p in ("prior_sd", "sigma_text", "sigma_image")
                  for v in ("0", "1e-300")]
        for exp, agent, param in cases:
            out = Path(tmp) / f"{exp}.parquet"
            result = cogtestbed("simulate", exp, "-a", agent, "-p", param, "--seed", "1", "-o", str(out), "--force")
            print(f"simulate {exp} -a {agent} -p {param}:", "exit 0, table written" if result.returncode == 0
                  else said(result))
        table = Path(tmp) / "collider.parquet"
        cogtestbed("simulate", "collider", "-a", "cbn", "--subjects", "1", "--seed", "1", "-o", str(table))
        frame = pd.read_parquet(table)
        frame["action"] = 100.0
        frame.to_parquet(table, index=False)
        got = json.loads(cogtestbed("metrics", str(table), "--json").stdout)
        print("constant collider answers:", {k: got["metrics"][k] for k in ("b", "p_c", "mae")}, got["flags"])
        big = cogtestbed("metrics", "restless-bandit", str(DATA / "RestlessBandit" / "random.csv"),
                         env={"COGTESTBED_MAX_INPUT_MB": "1"})
        print("large input:", said(big))
    constant_answers_everywhere()
    two_sessions_under_one_id()
    belief_single_test()
    with tempfile.TemporaryDirectory() as tmp:
        hierarchical_degenerate(Path(tmp), quick="--quick" in sys.argv)
        if "--quick" not in sys.argv:
            metrics_progress(Path(tmp))


def two_sessions_under_one_id() -> None:
    """CogBench's probabilistic files that judge a condition twice in a run: refused by default (the
    command's one line), read as second sessions under ``--sessions split``."""
    for name in ("claude-1.csv", "claude-2.csv"):
        path = DATA / "ProbabilisticReasoning" / name
        print(f"metrics {name}:", said(cogtestbed("metrics", str(path))))
        got = json.loads(cogtestbed("metrics", str(path), "--sessions", "split", "--json").stdout)
        second = {r["run"] for r in got["per_run"] if r["session"] == 1}
        print(f"metrics {name} --sessions split: exit 0, {len(second)} runs with a second session, performance "
              f"{got['metrics']['performance']:.4f}")


def _constant_subject(subjects: int = 3) -> pd.DataFrame:
    from cogtestbed.registry import get_experiment
    from cogtestbed.simulation import simulate

    table = simulate(get_experiment("instrumental-learning"), "rw-pm", subjects, 1)
    table.loc[(table["subject"] == 1) & table["valid"], "action"] = 1
    return table


def hierarchical_degenerate(tmp: Path, quick: bool) -> None:
    """``fit --method hierarchical`` of a constant table (refused) and of one constant subject of three."""
    table = _constant_subject()
    constant = table.copy()
    constant.loc[constant["valid"], "action"] = 1
    constant.to_parquet(tmp / "constant.parquet")
    print("fit --method hierarchical, every answer 1:", said(cogtestbed(
        "fit", "rw-pm", str(tmp / "constant.parquet"), "-o", str(tmp / "fit0"), "--method", "hierarchical")))
    if quick:
        return
    table.to_parquet(tmp / "one.parquet")
    done = cogtestbed("fit", "rw-pm", str(tmp / "one.parquet"), "-o", str(tmp / "fit1"), "--method", "hierarchical",
                      "--draws", "200", "--chains", "2", "--json")
    out = json.loads(done.stdout)
    rows = pd.read_csv(tmp / "fit1" / "subjects.csv")
    null = sorted(int(s) for s in rows.loc[rows["mean"].isna(), "subject"].unique())
    print(f"fit --method hierarchical, subject 1 of 3 constant: exit {done.returncode}, n_subjects "
          f"{out['n_subjects']}, n_identified {out['n_identified']}, unidentified {list(out['unidentified'])}, "
          f"subjects.csv null rows for {null}; flag: {out['flags'][0]}")


def belief_single_test() -> None:
    """Test T2 of belief coherence alone on a table whose every valid answer is one value."""
    from cogtestbed.conformance.table_checks import constant_answers
    from cogtestbed.registry import get_experiment
    from cogtestbed.simulation import simulate

    spec = get_experiment("belief-coherence")
    table = constant_answers(simulate(spec, "logit-rum", 2, 1, design=spec.design_cls(n_contexts=20)))
    options = dict(spec.metrics.smoke_options)
    print("belief t2 alone, constant answers, raw test (before):", spec.metrics.tests["t2"](table, **options))
    got = spec.metrics.test_result("t2", table, **options)
    print("belief t2 alone, constant answers, test_result (now):", got["metrics"], got["null_reasons"]["t2"])


def metrics_progress(tmp: Path) -> None:
    """``metrics --json`` on 2,000 simulated runs: the progress lines on stderr and the result's count."""
    from cogtestbed.registry import get_experiment
    from cogtestbed.simulation import simulate

    simulate(get_experiment("instrumental-learning"), "rw-pm", 2000, 1).to_parquet(tmp / "big.parquet")
    done = cogtestbed("metrics", str(tmp / "big.parquet"), "--json")
    got = json.loads(done.stdout)
    lines = done.stderr.strip().splitlines()
    for line in lines:
        if not line.startswith("warning:"):
            print("  stderr:", line)
    print(f"  stderr: ... and {sum(line.startswith('warning:') for line in lines)} warning lines (MLE fits that "
          "did not converge)")
    print(f"metrics of 2,000 runs: exit {done.returncode}, per_run rows {len(got['per_run'])}, n_runs "
          f"{got['metrics'].get('n_runs')}")


def constant_answers_everywhere() -> None:
    """Every experiment's metrics and fits of two subjects whose every valid answer is one value."""
    import warnings

    from cogtestbed.conformance.table_checks import constant_answers
    from cogtestbed.registry import experiment_names, get_experiment
    from cogtestbed.simulation import simulate

    warnings.filterwarnings("ignore")
    for name in experiment_names():
        spec = get_experiment(name)
        table = constant_answers(simulate(spec, spec.declared_agents[0], 2, 1, design=spec.design_cls()))
        result = spec.metrics(table, **dict(spec.metrics.smoke_options))
        flag = next((f for f in result["flags"] if f.startswith("degenerate answers")), "(no flag)")
        nulled = sorted(k for k in spec.metrics.unidentified if k in result["metrics"] and result["metrics"][k] is None)
        fitted = {m: f"{int(spec.model(m).fit_identified(table)['identified'].sum())}/2" for m in sorted(spec.models)}
        print(f"constant answers, {name}: {flag[:90]}; null: {', '.join(nulled) or 'none'}; fits identified: {fitted}")


if __name__ == "__main__":
    main()
