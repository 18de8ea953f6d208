"""Revealed vs stated belief: the paper's 11 models and synthetic agents on one plot.

x = StaA error (1 − P(correct)), y = RevB Chebyshev distance to p*, one point per model and
scenario (means over the appendix conditions; RevB of the instruct checkpoints, which the paper
pairs with StaA).  Synthetic agents are simulated on the default grid.  Writes
docs/revealed_vs_stated.png.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from cogtestbed.inference.revealed import reference_tables, revealed_metrics  # noqa: E402
from cogtestbed.simulation import simulate  # noqa: E402

OUT = Path(__file__).resolve().parents[2] / "docs" / "revealed_vs_stated.png"
AGENTS = {
    "rational": ("rational", {}),
    "dissonant β_first=2, θ=8": ("dissonant", {"beta_first": 2.0, "theta": 8.0}),
    "dissonant β_first=2, β_label=1, θ=2": ("dissonant", {"beta_first": 2.0, "beta_label": 1.0, "theta": 2.0}),
    "dissonant τ=0.5, κ=3, θ=0": ("dissonant", {"tau": 0.5, "kappa": 3.0, "theta": 0.0}),
}
COLORS = {"dice": "tab:blue", "coins": "tab:orange", "choice": "tab:green", "preference": "tab:red"}
MARKERS = ["o", "s", "^", "D"]


def paper_points() -> pd.DataFrame:
    ref = reference_tables()
    revb = ref[(ref["framework"] == "RevB-instruct") & (ref["metric"] == "chebyshev")]
    staa = ref[ref["framework"] == "StaA-instruct"]
    a = revb.groupby(["scenario", "model"])["value"].mean().rename("revb")
    b = staa.groupby(["scenario", "model"])["value"].mean().rename("staa")
    return pd.concat([a, b], axis=1).dropna().reset_index()


def main() -> None:
    fig, ax = plt.subplots(figsize=(7, 5.5))
    pts = paper_points()
    for sc, g in pts.groupby("scenario"):
        ax.scatter(g["staa"], g["revb"], s=22, alpha=0.45, color=COLORS[str(sc)], label=f"paper, {sc} (11 models)")
    for (label, (agent, params)), marker in zip(AGENTS.items(), MARKERS, strict=True):
        cells = revealed_metrics(simulate("revealed-belief", agent, 1, 0, params), per_item="no",
                                 reference="no")["by_cell"]
        df = pd.DataFrame(cells)
        rev = df[df["channel"] == "revb"].groupby("scenario")["chebyshev"].mean()
        sta = df[df["channel"] == "staa"].groupby("scenario")["staa_error"].mean()
        for sc in rev.index:
            ax.scatter(sta[sc], rev[sc], marker=marker, s=90, facecolor="none", edgecolor=COLORS[str(sc)],
                       linewidth=1.8)
        ax.scatter([], [], marker=marker, s=90, facecolor="none", edgecolor="black", label=label)
    ax.plot([0, 1], [0, 1], color="grey", lw=0.8, ls=":")
    ax.set_xlabel("stated answer (StaA): error 1 − P(correct)")
    ax.set_ylabel("revealed belief (RevB): Chebyshev distance to p*")
    ax.set_xlim(-0.03, 1.0)
    ax.set_ylim(-0.02, 0.75)
    ax.set_title("Revealed vs stated belief, per scenario")
    ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(OUT, dpi=130)
    print(OUT)


if __name__ == "__main__":
    main()
