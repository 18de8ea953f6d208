"""simulate's memory estimate from the design (issue 30): one session's estimated bytes
(:func:`cogtestbed.simulation.session_bytes`, extrapolated from the default design above
``MEASURED_STEPS`` steps) against the bytes of the trial table one simulated subject really takes.

    PYTHONPATH=. python benchmarks/studies/memory_estimate.py
"""

from __future__ import annotations

from typing import Any

#: (experiment, agent, design fields): designs above MEASURED_STEPS steps a session, and one below.
CASES: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("magnitude", "linear", {"trials_per_session": 200}),
    ("restless-bandit", "random", {"block_lengths": (20000, 20000)}),
    ("bart", "random", {"balloons_per_type": 1000}),
    ("two-step", "random", {"n_days": 10000}),
)


def main() -> list[dict[str, Any]]:
    import pandas as pd

    from cogtestbed.registry import get_experiment
    from cogtestbed.simulation import MEASURED_STEPS, session_bytes, simulate

    rows = []
    for name, agent, fields in CASES:
        exp = get_experiment(name)
        design = exp.env_cls.design_cls(**fields)
        estimate = session_bytes(exp, agent, design=design)
        actual = int(simulate(exp, agent, 1, 0, design=design).memory_usage(deep=True).sum())
        steps = exp.env_cls.max_steps(design)
        rows.append({"experiment": name, "design": fields, "steps": steps,
                     "from": "the design" if steps <= MEASURED_STEPS else "the default design",
                     "estimated_bytes": estimate, "table_bytes": actual, "ratio": round(estimate / actual, 4)})
    print(pd.DataFrame(rows).to_string(index=False))
    return rows


if __name__ == "__main__":
    main()
