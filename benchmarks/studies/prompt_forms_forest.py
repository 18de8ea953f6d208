"""The worked example of docs/prompt-forms.md: 8 prompt forms × 10 RW± subjects with a known
wording effect (form SD 1.0 on logit α⁺), its per-form metrics, between-form SDs with intervals,
G coefficients, and the forest plot of the per-subject α⁺ (written to ``--plot``).

Run: ``python benchmarks/studies/prompt_forms_forest.py --plot docs/figures/prompt_forms_forest.png``.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cogtestbed.environments.forms import FormDesign
from cogtestbed.inference.form_effects import form_metrics
from cogtestbed.registry import get_experiment
from cogtestbed.simulation import simulate


def forest_plot(between: Mapping[str, Any], key: str, path: Any, title: str | None = None) -> None:
    """A forest plot of one per-unit value across prompt forms (``form_metrics(...)["between_forms"]``):
    each form's mean with its 95 % interval (mean ± 1.96 SE), the mean of the forms, and the
    between-form SD with its interval in the title."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    entry = between[key]
    rows = entry["per_form"]
    fig, ax = plt.subplots(figsize=(5, 0.4 * len(rows) + 1.4))
    for i, r in enumerate(rows):
        se = r["se"] or 0.0
        ax.errorbar(r["mean"], i, xerr=1.96 * se, fmt="s", color="black", capsize=3)
    if entry["mean_of_forms"] is not None:
        ax.axvline(entry["mean_of_forms"], color="tab:blue", ls="--", label="mean of the forms")
    ax.set_yticks(range(len(rows)), [f"form {r['form']} (n={r['n']})" for r in rows])
    ax.invert_yaxis()
    lo, hi = entry["interval"]
    sd = entry["between_form_sd"]
    ax.set_xlabel(key)
    ax.set_title(title or f"{key}: between-form SD {sd:.3g} [{lo:.3g}, {hi:.3g}]" if sd is not None else key,
                 fontsize=9)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plot", type=Path, default=Path("prompt_forms_forest.png"))
    args = ap.parse_args()
    exp = get_experiment("instrumental-learning")
    forms = FormDesign(tuple(range(8)), {"alpha_pos": 1.0})
    table = simulate(exp, "rw-pm", 80, 7, {"alpha_pos": 0.5, "alpha_neg": 0.5, "beta": 5.0}, forms=forms)
    truth = table.groupby("form")["form_offset_alpha_pos"].first()
    out = form_metrics(table, exp.metrics, exp.metrics(table))
    forest_plot(out["between_forms"], "alpha_pos", args.plot)
    keep = ("alpha_pos", "alpha_neg", "optimism_bias", "performance")
    print(json.dumps({"true_offsets_logit_alpha_pos": {int(k): round(float(v), 3) for k, v in truth.items()},
                      "between_forms": {k: {m: out["between_forms"][k][m] for m in
                                            ("between_form_sd", "interval", "g", "g_study")} for k in keep},
                      "plot": str(args.plot)}, indent=1))


if __name__ == "__main__":
    main()
