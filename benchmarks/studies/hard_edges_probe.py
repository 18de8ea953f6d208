"""The hostile probe's reproductions of issue 30, replayed through the command line (one process per
case): how many give a number from a table that is not valid (or has no valid answer), and how
many end in a traceback instead of one line (exit 2).

Each bad table is a simulated run with one edit, written as a user's pandas edit writes it, with
the manifest copied beside it.  A case passes when the command refuses it in one line with exit 2,
or (a table with no valid answer) reports every headline metric as null with a reason.

    PYTHONPATH=. python benchmarks/studies/hard_edges_probe.py
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

Edit = Callable[[pd.DataFrame], pd.DataFrame]


def cogtestbed(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cogtestbed", *args], capture_output=True, text=True,
                          timeout=600, check=False)


def _lists(column: str, edit: Callable[[np.ndarray], np.ndarray], rows: slice = slice(None)) -> Edit:
    def apply(t: pd.DataFrame) -> pd.DataFrame:
        cells = [np.asarray(v, dtype=float) for v in t[column]]
        for i in range(len(cells))[rows]:
            cells[i] = edit(cells[i].copy())
        return t.assign(**{column: cells})
    return apply


def _first_inf(v: np.ndarray) -> np.ndarray:
    v[0] = np.inf
    return v


def _all_invalid(t: pd.DataFrame) -> pd.DataFrame:
    from cogtestbed.conformance.table_checks import all_invalid

    out = all_invalid(t)  # valid False, no action (in the action column's own dtype)
    for c in ("probs", "logprobs"):
        if c in out.columns:
            out[c] = [[np.nan] * len(v) for v in out[c]]
    return out


REVEALED: dict[str, tuple[Edit, str]] = {
    "probs doubled": (_lists("probs", lambda v: v * 2), "refuse"),
    "probs*3-1": (_lists("probs", lambda v: v * 3 - 1), "refuse"),
    "p_star*0.5": (_lists("p_star", lambda v: v * 0.5), "refuse"),
    "logprobs+5": (_lists("logprobs", lambda v: v + 5), "refuse"),
    "correct_option=-1": (lambda t: t.assign(correct_option=-1), "refuse"),
    "correct_option=7": (lambda t: t.assign(correct_option=7), "refuse"),
    "one inf": (_lists("probs", _first_inf, slice(0, 1)), "refuse"),
    "NaN probs": (_lists("probs", lambda v: v * np.nan, slice(0, 50)), "refuse"),
    "unknown channel": (lambda t: t.assign(channel=t["channel"].astype(str).where(t.index > 0, "zzz")), "refuse"),
    "no probs": (lambda t: t.drop(columns=["probs"]), "refuse"),
    "no p_star": (lambda t: t.drop(columns=["p_star"]), "refuse"),
    "empty table": (lambda t: t.iloc[:0], "null"),
    "all invalid": (_all_invalid, "null"),
}


def judge(proc: subprocess.CompletedProcess[str], expect: str) -> dict[str, Any]:
    """traceback: a Python traceback on stderr; number: exit 0 with a headline number where the case
    allows none; ok: refused in one line (exit 2) or every headline null as expected."""
    traceback = "Traceback" in proc.stderr
    number = False
    if proc.returncode == 0 and proc.stdout.strip().startswith("{"):
        metrics = json.loads(proc.stdout).get("metrics", {})
        number = any(v is not None for v in metrics.values())
    if expect == "refuse":
        ok = proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
        number = number or proc.returncode == 0
    else:
        ok = proc.returncode in (0, 2) and not number
    return {"exit": proc.returncode, "traceback": traceback, "number": number, "ok": ok and not traceback,
            "line": (proc.stderr.strip().splitlines() or [""])[-1][:110]}


def other_families(root: Path) -> list[dict[str, Any]]:
    """magnitude and belief-coherence: a table without a valid answer, absurd metric options."""
    rows = []
    for exp, agent, design in (("magnitude", "kalman", ("--design", "trials_per_session=4")),
                               ("belief-coherence", "leak", ("--design", "n_contexts=40", "--design", "n_reps=2"))):
        src = root / f"{exp}.parquet"
        proc = cogtestbed("simulate", exp, "--agent", agent, "--subjects", "2", "--seed", "2", *design,
                          "--output", str(src))
        assert proc.returncode == 0, proc.stderr
        bad = root / f"{exp}-invalid.parquet"
        _all_invalid(pd.read_parquet(src)).to_parquet(bad)
        shutil.copy(str(src) + ".manifest.json", str(bad) + ".manifest.json")
        rows.append({"case": f"metrics {exp}: all invalid", **judge(cogtestbed("metrics", exp, str(bad), "--json"),
                                                                      "null")})
        options = ([("--bootstrap", "-1"), ("--bootstrap", "1000000000")] if exp == "magnitude" else
                   [("--k", "0"), ("--n-boot", "0"), ("--t2-bins", "0"), ("--t2-bins", "1"), ("--t2-bins", "100000")])
        for flag, value in options:
            rows.append({"case": f"metrics {exp} {flag} {value}",
                         **judge(cogtestbed("metrics", exp, str(src), "--json", flag, value), "refuse")})
    rows.append({"case": "simulate magnitude numerical_bias=nan", **judge(cogtestbed(
        "simulate", "magnitude", "--agent", "kalman", "--design", "numerical_bias=nan", "--output",
        str(root / "nb.parquet")), "refuse")})
    return rows


def main() -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        src = root / "rb.parquet"
        proc = cogtestbed("simulate", "revealed-belief", "--agent", "dissonant", "--param", "beta_first=2",
                          "--param", "noise=0.05", "--subjects", "2", "--seed", "1", "--output", str(src))
        assert proc.returncode == 0, proc.stderr
        base = pd.read_parquet(src)
        for name, (edit, expect) in REVEALED.items():
            path = root / f"{name.replace(' ', '_')}.parquet"
            edit(base.copy()).to_parquet(path)
            shutil.copy(str(src) + ".manifest.json", str(path) + ".manifest.json")
            res = judge(cogtestbed("metrics", "revealed-belief", str(path), "--json"), expect)
            rows.append({"case": f"metrics revealed-belief: {name}", **res})
        rows += other_families(root)
        refused = {
            "run --rpm 0": ("run", "two-step", "--llm", "hf:tiny-random", "-o", str(root / "r"), "--dry-run",
                            "--rpm", "0"),
            "run --rpm nan": ("run", "two-step", "--llm", "hf:tiny-random", "-o", str(root / "r"), "--dry-run",
                              "--rpm", "nan"),
            "run --top-logprobs -3": ("run", "two-step", "--llm", "hf:tiny-random", "-o", str(root / "r"),
                                      "--dry-run", "--top-logprobs", "-3"),
            "simulate dice_faces=12,12": ("simulate", "revealed-belief", "--agent", "dissonant", "--design",
                                          "dice_faces=12,12", "--output", str(root / "x.parquet")),
            "simulate magnitude trials_per_session=1e9": (
                "simulate", "magnitude", "--agent", "kalman", "--design", "trials_per_session=1000000000",
                "--output", str(root / "y.parquet")),
            "simulate belief-coherence n_contexts=1e8": (
                "simulate", "belief-coherence", "--agent", "leak", "--design", "n_contexts=100000000",
                "--output", str(root / "z.parquet")),
        }
        for name, args in refused.items():
            rows.append({"case": name, **judge(cogtestbed(*args), "refuse")})
        good = {"plan_version": 1, "run": {"experiment": "two-step", "llms": ["hf:tiny-random"], "subjects": 2,
                                           "seed": 0, "design": {}, "max_tokens": 8, "temperature": 0.0,
                                           "reask": 0, "max_calls": None, "max_cost": None}}
        for name, edit in {"design abc": {"design": "abc"}, "seed x": {"seed": "x"}, "subjects '5'": {"subjects": "5"},
                           "subjects 2.7": {"subjects": 2.7}, "subjects 1e12": {"subjects": 1e12},
                           "subjects 0": {"subjects": 0}, "subjects -3": {"subjects": -3},
                           "max_cost -1": {"max_cost": -1}, "max_calls 7.9": {"max_calls": 7.9},
                           "max_calls abc": {"max_calls": "abc"}}.items():
            plan = root / f"plan-{len(rows)}.json"
            plan.write_text(json.dumps({**good, "run": {**good["run"], **edit}}))
            rows.append({"case": f"run --plan ({name})",
                         **judge(cogtestbed("run", "--plan", str(plan), "-o", str(root / "p"), "--dry-run"), "refuse")})
    frame = pd.DataFrame(rows)
    with pd.option_context("display.width", 220, "display.max_colwidth", 110):
        print(frame.to_string(index=False))
    print(f"\n{len(frame)} cases: {int(frame['number'].sum())} numbers from invalid tables, "
          f"{int(frame['traceback'].sum())} tracebacks, {int((~frame['ok']).sum())} not refused in one line")
    return rows


if __name__ == "__main__":
    main()
