"""CogBench's behavioural and performance phenotype (Coda-Forno et al. 2024, Fig. 2).

Each agent's metric ``x`` is normalised against CogBench's random-agent and human references::

    signed   = (x − x_random) / (x_human − x_random)        (paper-era code, commit 1491337)
    absolute = |x − x_random| / |x_human − x_random|        (later code; loses the sign)

so 0 is the random agent and 1 the average human.  The references are the raw values of
CogBench's ``Analysis/data/behaviour.csv`` / ``performance.csv`` (Fig. 2), declared in each experiment's spec
(``ExperimentSpec.phenotype``); an experiment takes part as soon as it is
registered (:func:`cogtestbed.registry.experiment_names`) — generic code, no per-experiment
branches.

**Tiny denominators.**  When ``|x_human − x_random|`` is small relative to the values
(``< TINY_RELATIVE_GAP`` of ``max(|x_human|, |x_random|)``) the normalised value is dominated by
noise: optimism bias (0.186 vs 0.184) gives normalised values of 50–200 and horizon performance
(51.61 vs 50.43 dollars) is borderline.  Such metrics are flagged, and so is every normalised
value outside CogBench's plotted range ([−1, 5] behaviour, [−1, 3] performance), which the
figure clips.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from cogtestbed.errors import InputError

Kind = Literal["behaviour", "performance"]
#: Relative human–random gap below which a metric's normalisation is flagged as unstable.
TINY_RELATIVE_GAP = 0.05
#: CogBench's plotted x-ranges (Analysis/phenotype_comp.py).
AXIS_LIMITS: dict[str, tuple[float, float]] = {"behaviour": (-1.0, 5.0), "performance": (-1.0, 3.0)}


@dataclass(frozen=True)
class ReferenceMetric:
    """A phenotype metric: where it comes from and CogBench's human / random raw values."""

    experiment: str
    key: str
    label: str
    kind: Kind
    human: float
    random: float
    cogbench_task: str

    @property
    def gap(self) -> float:
        return self.human - self.random

    @property
    def tiny_denominator(self) -> bool:
        scale = max(abs(self.human), abs(self.random), 1e-12)
        return abs(self.gap) < TINY_RELATIVE_GAP * scale


def references() -> tuple[ReferenceMetric, ...]:
    """Every registered experiment's phenotype references (its spec's ``phenotype``).

    Behavioural metrics first, then performance, each in registry order; the raw values are
    CogBench's ``Analysis/data/behaviour.csv`` / ``performance.csv`` (Coda-Forno et al. 2024, Fig. 2).
    """
    from cogtestbed.registry import experiment_names, get_experiment

    refs = [ReferenceMetric(name, r.key, r.label, r.kind, r.human, r.random, r.source_task)
            for name in experiment_names() for r in get_experiment(name).phenotype]
    return tuple(sorted(refs, key=lambda r: r.kind != "behaviour"))


def available_references(kinds: Iterable[str] = ("behaviour", "performance")) -> list[ReferenceMetric]:
    """References of the registered experiments, in Fig. 2's order."""
    wanted = set(kinds)
    return [r for r in references() if r.kind in wanted]


def normalise(x: float, ref: ReferenceMetric) -> tuple[float, float]:
    """(signed, absolute) normalisation of ``x`` against ``ref`` (see module docstring)."""
    signed = (x - ref.random) / ref.gap
    return float(signed), float(abs(x - ref.random) / abs(ref.gap))


# ----------------------------------------------------------------------------- collecting metrics
@dataclass(frozen=True)
class AgentMetrics:
    """One agent's reported metrics on one experiment (from one data file)."""

    agent: str
    experiment: str
    source: str
    metrics: Mapping[str, Any]


def experiment_for_csv(path: Path, forced: str | None = None) -> str:
    """Which registered experiment a CogBench CSV belongs to.

    Order: ``forced``; CogBench's folder layout (``<Task>/<agent>.csv``); the importers' sniffers
    (an error if several match).
    """
    from cogtestbed.registry import experiment_names, get_experiment

    names = experiment_names()
    if forced is not None:
        get_experiment(forced)
        return forced
    by_folder = {r.cogbench_task: r.experiment for r in references()}
    if path.parent.name in by_folder:
        return by_folder[path.parent.name]
    matches = [n for n in names
               if any(imp.sniff(path) for imp in get_experiment(n).importers.values())]
    if len(matches) == 1:
        return matches[0]
    what = "no registered experiment" if not matches else f"several experiments ({', '.join(matches)})"
    raise InputError(f"{path}: {what} recognise this CSV; pass `experiment`")


def collect_files(paths: Sequence[Path]) -> list[Path]:
    """Expand directories into their ``*.csv`` / ``*.parquet`` files (sorted)."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            out.extend(sorted(q for q in p.rglob("*") if q.suffix in (".csv", ".parquet")))
        elif p.exists():
            out.append(p)
        else:
            raise FileNotFoundError(f"no such file or directory: {p}")
    return out


def metrics_from_files(
    paths: Sequence[Path], agents: Sequence[str] | None = None, experiment: str | None = None,
    kinds: Iterable[str] = ("behaviour", "performance"), sessions: str | None = None,
) -> list[AgentMetrics]:
    """Each file's reported metrics per (agent, experiment), for experiments with references.

    CSV files are CogBench's ``<Task>/<agent>.csv`` (agent = file stem); Parquet files are trial
    tables (agents and experiments from their ``agent`` / ``experiment`` columns).  ``sessions``
    goes to the importers that take it (files without trial key:
    :meth:`~cogtestbed.experiments.spec.Importer.load_as`).
    """
    from cogtestbed.data.rows import check_sessions_mode

    if sessions is not None:
        check_sessions_mode(sessions)
    from cogtestbed.registry import get_experiment, read_trials

    relevant = {r.experiment for r in available_references(kinds)}
    wanted = set(agents) if agents else None
    out: list[AgentMetrics] = []
    for path in collect_files(paths):
        if path.suffix == ".parquet":
            table = read_trials(path, user_file=True)
            for (exp_name, agent), group in table.groupby(["experiment", "agent"], observed=True):
                if exp_name not in relevant or (wanted is not None and agent not in wanted):
                    continue
                result = get_experiment(str(exp_name)).metrics(group)
                out.append(AgentMetrics(str(agent), str(exp_name), str(path), result["metrics"]))
            continue
        agent = path.stem
        if wanted is not None and agent not in wanted:
            continue
        exp_name = experiment_for_csv(path, experiment)
        if exp_name not in relevant:
            continue
        exp = get_experiment(exp_name)
        table, _ = exp.read(path, "cogbench", sessions if exp.importer("cogbench").repeat_key else None)
        out.append(AgentMetrics(agent, exp_name, str(path), exp.metrics(table)["metrics"]))
    return out


# ----------------------------------------------------------------------------- the table
def phenotype_table(
    results: Iterable[AgentMetrics], kinds: Iterable[str] = ("behaviour", "performance")
) -> pd.DataFrame:
    """One row per (agent, metric): raw value, references, signed and absolute normalisation.

    ``tiny_denominator`` flags unstable normalisations; ``outside_plot`` flags normalised values
    that CogBench's figure clips.  When an agent has the same experiment from several files,
    the first is used.
    """
    refs = available_references(kinds)
    values: dict[tuple[str, str, str], tuple[float, str]] = {}
    agents: list[str] = []
    for r in results:
        if r.agent not in agents:
            agents.append(r.agent)
        for ref in refs:
            if ref.experiment == r.experiment and ref.key in r.metrics:
                values.setdefault((r.agent, r.experiment, ref.key), (float(r.metrics[ref.key]), r.source))
    rows = []
    for agent in agents:
        for ref in refs:
            x, source = values.get((agent, ref.experiment, ref.key), (float("nan"), ""))
            signed, absolute = normalise(x, ref) if np.isfinite(x) else (float("nan"), float("nan"))
            lo, hi = AXIS_LIMITS[ref.kind]
            rows.append({
                "agent": agent, "experiment": ref.experiment, "metric": ref.key, "label": ref.label,
                "kind": ref.kind, "value": x, "human": ref.human, "random": ref.random,
                "signed": signed, "absolute": absolute, "tiny_denominator": ref.tiny_denominator,
                "outside_plot": bool(np.isfinite(signed) and not lo <= signed <= hi),
                "source": source,
            })
    return pd.DataFrame(rows)


def table_flags(table: pd.DataFrame) -> list[str]:
    """Human-readable warnings: tiny denominators and clipped values, only about the metrics the
    table holds a value of (a horizon file says nothing about instrumental learning's optimism bias)."""
    flags = []
    for (_, _, label), g in table.groupby(["experiment", "metric", "label"], sort=False):
        if bool(g["tiny_denominator"].iloc[0]) and g["signed"].notna().any():
            h, r = g["human"].iloc[0], g["random"].iloc[0]
            flags.append(f"{label}: human {h:g} vs random {r:g} — the denominator |human − random| = "
                         f"{abs(h - r):.3g} is tiny, so normalised values are dominated by noise")
    for _, row in table[table["outside_plot"]].iterrows():
        flags.append(f"{row['agent']} / {row['label']}: normalised {row['signed']:.3g} lies outside "
                     f"CogBench's plotted range {AXIS_LIMITS[row['kind']]} (clipped in the figure)")
    return flags


# ----------------------------------------------------------------------------- the figure
_EXPERIMENT_COLOURS = {
    "probabilistic-reasoning": "tab:green", "horizon": "tab:orange", "restless-bandit": "tab:blue",
    "instrumental-learning": "tab:red", "two-step": "tab:brown", "temporal-discounting": "tab:cyan",
    "bart": "tab:purple",
}


def plot_phenotype(table: pd.DataFrame, path: Path, kind: Kind,
                   normalisation: Literal["signed", "absolute"] = "signed") -> Path:
    """Fig. 2-style panels: one per agent, a horizontal bar per metric (random = 0, human = 1).

    Bars beyond CogBench's x-range are clipped at the edge and labelled with their value; metrics
    with a tiny denominator get a ``†`` after their label.  Written as PNG (Agg backend).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sub = table[table["kind"] == kind]
    agents = list(dict.fromkeys(sub["agent"]))
    if not agents:
        raise InputError(f"no {kind} metrics to plot")
    labels = list(dict.fromkeys(sub["label"]))
    lo, hi = AXIS_LIMITS[kind]
    fig, axes = plt.subplots(1, len(agents), figsize=(max(3.0, 2.2 * len(agents)), 0.45 * len(labels) + 1.4),
                             sharey=True, squeeze=False)
    for ax, agent in zip(axes[0], agents, strict=True):
        rows = sub[sub["agent"] == agent].set_index("label").loc[labels]
        y = np.arange(len(labels))
        vals = rows[normalisation].to_numpy(dtype=float)
        shown = np.clip(np.nan_to_num(vals, nan=0.0), lo, hi)
        colours = [_EXPERIMENT_COLOURS.get(e, "tab:gray") for e in rows["experiment"]]
        ax.barh(y, shown, color=colours, alpha=0.6)
        for yi, v, s in zip(y, vals, shown, strict=True):
            if not np.isfinite(v):
                ax.text(0.05, yi, "n/a", va="center", fontsize=7, color="gray")
            elif v != s:
                ax.text(s, yi, f" {v:.3g}" if v > hi else f"{v:.3g} ", va="center", fontsize=7,
                        ha="right" if v > hi else "left")
        ax.axvline(0, color="black", linestyle="dotted")
        ax.axvline(1, color="black", linestyle="dotted")
        ax.set_xlim(lo, hi)
        ax.set_title(agent, fontsize=9)
        ax.tick_params(labelsize=7)
    tiny = set(sub.loc[sub["tiny_denominator"], "label"])
    axes[0][0].set_yticks(np.arange(len(labels)))
    axes[0][0].set_yticklabels([lab + (" †" if lab in tiny else "") for lab in labels])
    axes[0][0].invert_yaxis()
    fig.supxlabel(f"{kind} ({normalisation}; random = 0, human = 1; † tiny human − random gap)", fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=150)
    plt.close(fig)
    return path
