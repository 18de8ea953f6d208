"""Pricing a plan's designs fast without changing a price (issue 40 item 3): two LLMs priced from one
playthrough of the sessions, and dry runs rendered on the plan's pool workers while it searches.
Every figure is compared with the serial path as it was (each LLM's own ``dry_run``, in this process)."""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import cogtestbed.planning.plan as plan_module
from cogtestbed.environments.twostep import TwoStepDesign
from cogtestbed.llm_adapters.runs.pricing import dry_run
from cogtestbed.planning.kinds.power.power_sims import PowerEvaluator
from cogtestbed.planning.plan import Planner
from cogtestbed.planning.pricing import Pricer
from cogtestbed.planning.space import design_axes
from cogtestbed.registry import get_experiment
from cogtestbed.studies.driver import fork_pool, stop_pool, study_spec
from cogtestbed.studies.study_kinds import load_study

TWO = ("openai:gpt-4o", "openai:gpt-4o-mini")


class SerialPricer(Pricer):
    """The pricing before the pool and the shared playthrough: each group's own ``run --dry-run``,
    rendered in this process when asked."""

    def submit(self, pool: Any, design: Any, n: int) -> None:
        return None

    def reports(self, design: Any, n: int) -> tuple[dict[str, Any], ...]:
        out = []
        for llm, client, price in zip(self.llms, self.clients, self.price, strict=True):
            key = (llm, design.model_dump_json(), n)
            if key not in self._cache:
                self._cache[key] = dry_run(self.exp, design, client, self.run_config(llm, client, design, n), price)
            out.append(self._cache[key])
        return tuple(out)


@pytest.mark.parametrize(("experiment", "design"), [("two-step", TwoStepDesign(n_days=7)),
                                                    ("instrumental-learning", None)])
def test_two_llms_from_one_playthrough_equal_their_own_dry_runs(experiment: str, design: Any) -> None:
    exp = get_experiment(experiment)
    design = design or exp.design_cls()
    joint, serial = Pricer(exp, TWO, seed=5), SerialPricer(exp, TWO, seed=5)
    spread, want = joint.reports(design, 3), serial.reports(design, 3)
    # the plan's reports add each session's prompt tokens (what a sample of sessions is scaled by)
    assert all(sum(r["prompt_tokens_by_session"]) == r["prompt_tokens"] for r in spread)
    got = tuple({k: v for k, v in r.items() if k != "prompt_tokens_by_session"} for r in spread)
    assert got == want  # every field of both LLMs' reports: calls, tokens, dollars, the invalid-answer range
    assert got[0]["llm"] == TWO[0] and got[1]["llm"] == TWO[1]
    assert got[0]["prompt_tokens"] == got[1]["prompt_tokens"] and got[0]["estimated_cost_usd"] > \
        got[1]["estimated_cost_usd"]  # the same prompts at gpt-4o's and gpt-4o-mini's prices


def test_dry_runs_on_pool_workers_equal_the_serial_prices() -> None:
    exp = get_experiment("two-step")
    items = [(TwoStepDesign(n_days=d), n) for d, n in ((4, 3), (9, 2), (4, 5))]
    serial, pooled = SerialPricer(exp, TWO, seed=2), Pricer(exp, TWO, seed=2)
    pool = fork_pool(2)
    try:
        for design, n in items:
            pooled.submit(pool, design, n)
        assert len(pooled._pending) == 3
        pooled.submit(pool, *items[0])  # already under way: not started twice
        assert len(pooled._pending) == 3
        got = [pooled.exact(design, n) for design, n in items]
    finally:
        pool.shutdown()
    assert not pooled._pending
    assert got == [serial.exact(design, n) for design, n in items]


def test_a_stopped_pool_leaves_its_designs_to_be_priced_here() -> None:
    exp = get_experiment("two-step")
    design = TwoStepDesign(n_days=5)
    pool = fork_pool(1)
    pricer = Pricer(exp, TWO, seed=4)
    pool.submit(time.sleep, 30)  # the one worker busy: the dry run waits in the queue
    pricer.submit(pool, design, 2)
    stop_pool(pool)  # an interrupt: the queued dry run cancelled or broken, the busy worker ended
    future = pricer._pending[(design.model_dump_json(), 2)]
    assert future.done() and (future.cancelled() or future.exception() is not None)
    assert pricer.exact(design, 2) == SerialPricer(exp, TWO, seed=4).exact(design, 2)


class CurvePower(PowerEvaluator):
    """A power evaluator whose studies are draws from a known power curve (seeded by design and task),
    so a whole search takes a moment; its pool is real, and the pricer's dry runs go to it."""

    def _run_tasks(self, payload: str, tasks: list[dict[str, Any]]) -> list[pd.DataFrame]:
        study = load_study(payload)
        runs, trials = study.runs[0], study.trials[0]
        if self.workers > 1 and self.pool is None:
            self.pool = fork_pool(self.workers)
        power = stats.norm.cdf(-2.2 + 0.4 * math.sqrt(runs) + 0.03 * (trials or 0))
        rng = np.random.default_rng([runs, trials or 0, study.seed, tasks[0]["index"]])
        d = rng.normal(0.2, 0.1, len(tasks))
        return [pd.DataFrame({"detected": rng.random(len(tasks)) < power, "difference": d, "estimate_a": 0.3,
                              "estimate_b": 0.3 + d})]


def test_a_plan_priced_on_its_pool_chooses_and_prices_as_the_serial_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same small two-LLM plan searched twice in this process: designs, simulations and every
    price identical with its dry runs on the pool workers (and one playthrough for both LLMs) and
    with the serial pricing of each LLM's own dry run."""
    monkeypatch.setattr(plan_module, "PowerEvaluator", CurvePower)
    exp = get_experiment("two-step")
    spec = study_spec(kind="metric-power", experiment="two-step", agent="hybrid", metric="model_basedness",
                      compare=({"w": 0.1, "beta": 5.0}, {"w": 0.9, "beta": 5.0}), seed=1)
    size, others = design_axes(spec, exp, None, "4:40", "10,20")
    results = [Planner(spec, cls(exp, TWO, seed=1), size, others, mc_se=0.1, workers=2).plan()
               for cls in (SerialPricer, Pricer)]
    serial, pooled = ([(e.point, e.estimate, e.cost) for e in r.evaluated] for r in results)
    assert pooled == serial and len(serial) >= 5
    assert results[1].chosen == results[0].chosen
    assert results[1].chosen.cost is not None and results[1].chosen.cost.dollars > 0
