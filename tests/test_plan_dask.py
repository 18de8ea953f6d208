"""``plan --dask`` / ``ct.plan(dask=...)`` (issue 71, item 3): the plan's simulated studies on a Dask scheduler
and two workers started as separate processes over TCP on 127.0.0.1, and the plan.json of the local plan."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_dask_processes import _cluster
from tolerance import assert_close

import cogtestbed as ct

ROOT = Path(__file__).resolve().parents[1]
ARGS: dict[str, Any] = {"model": "rw-pm", "effect": {"optimism_bias": 0.4}, "llm": "openai:gpt-4o-mini",
                        "subjects": (4, 16), "trials": [48], "mc_se": 0.2, "seed": 3, "workers": 1}


def _without_timings(payload: Any) -> Any:
    """The plan without its timings and the versions of the packages the process had loaded."""
    if isinstance(payload, dict):
        return {k: _without_timings(v) for k, v in payload.items()
                if "seconds" not in k and k not in ("versions", "created")}
    if isinstance(payload, list):
        return [_without_timings(v) for v in payload]
    return payload


@pytest.mark.slow  # about 6 min on 2 busy cores: the plan three times, two of them on the cluster
def test_plan_on_a_two_worker_cluster_is_the_local_plan(tmp_path: Path) -> None:
    local = ct.plan("instrumental-learning", **ARGS)
    local_json = json.loads(local.save(tmp_path / "local")["plan"].read_text())
    with _cluster(tmp_path, workers=2) as address:
        from distributed import Client

        with Client(address) as client:
            before = sum(client.run(lambda dask_worker: len(dask_worker.data) + dask_worker.state.transition_counter)
                         .values())
            on_dask = ct.plan("instrumental-learning", dask=address, **ARGS)
            after = sum(client.run(lambda dask_worker: len(dask_worker.data) + dask_worker.state.transition_counter)
                        .values())
        cli = subprocess.run([sys.executable, "-m", "cogtestbed", "plan", "instrumental-learning", "--model", "rw-pm",
                              "--effect", "optimism_bias=0.4", "--llm", "openai:gpt-4o-mini", "--subjects", "4:16",
                              "--trials", "48", "--mc-se", "0.2", "--seed", "3", "--workers", "1", "--dask", address,
                              "-o", str(tmp_path / "cli"), "--json"], capture_output=True, text=True, cwd=ROOT,
                             timeout=900)
    assert after > before  # the workers ran the simulations
    assert cli.returncode == 0, cli.stderr[-2000:]
    dask_json = json.loads(on_dask.save(tmp_path / "dask")["plan"].read_text())
    assert "dask" not in json.dumps(dask_json["request"])  # where it ran is no part of the plan
    assert_close(_without_timings(dask_json), _without_timings(local_json))
    assert_close(_without_timings(json.loads((tmp_path / "cli" / "plan.json").read_text())),
                 _without_timings(local_json))
