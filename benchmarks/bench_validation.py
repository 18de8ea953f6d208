"""What checking a table against its experiment's declared schema costs (pandera).

Prints, per CogBench task, the CPU ms of importing gpt-4's released file and of validating the
imported table (best of 5), and the same for a 100-subject simulated instrumental-learning table:
the validation that now runs before every ``cogtestbed metrics`` / ``fit`` / ``phenotype``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cogtestbed.registry import get_experiment, validate_table
from cogtestbed.simulation import simulate

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import best_cpu_of  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "cogbench"
TASKS = {"instrumental-learning": "InstrumentalLearning", "bart": "BART", "horizon": "HorizonTask",
         "two-step": "TwoStepTask", "restless-bandit": "RestlessBandit",
         "probabilistic-reasoning": "ProbabilisticReasoning", "temporal-discounting": "TemporalDiscounting"}


def cpu_ms(fn: Callable[[], Any], repeats: int = 5) -> float:
    """Smallest CPU time of ``repeats`` calls in ms (after one warm-up call)."""
    return 1000 * best_cpu_of(fn, repeats)


def main() -> None:
    for name, folder in TASKS.items():
        path = DATA / folder / "gpt-4.csv"
        if not path.exists():
            path = sorted((DATA / folder).glob("*.csv"))[0]
        exp = get_experiment(name)
        table = exp.importer("cogbench").load(path)
        load_ms = cpu_ms(lambda exp=exp, path=path: exp.importer("cogbench").load(path))
        check_ms = cpu_ms(lambda table=table, name=name: validate_table(table, name))
        print(json.dumps({"experiment": name, "file": path.name, "rows": len(table),
                          "import_ms": round(load_ms, 1), "validate_ms": round(check_ms, 1)}))
    sim = simulate("instrumental-learning", "rw-pm", 100, seed=0)
    print(json.dumps({"experiment": "instrumental-learning", "file": "simulated, 100 subjects", "rows": len(sim),
                      "validate_ms": round(cpu_ms(lambda: validate_table(sim)), 1)}))


if __name__ == "__main__":
    main()
