"""Why the PyMC RW± likelihood is a numba Op: logp+gradient time of three formulations.

50 subjects x 96 trials, hierarchical RW±, pytensor's NUMBA mode (what nutpie compiles):
(a) the numba pointwise-likelihood Op (the library's choice), (b) a pytensor ``scan`` over
trials vectorised across subjects.  A loop-free closed form (exact for binary rewards) was also
measured during development (~1.2 ms with the C backend) and not kept.
"""

from __future__ import annotations

import json
import time

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt

from cogtestbed.inference.hierarchical import pool_model_arrays, subject_parameters
from cogtestbed.inference.instrumental import CLIP_HI, CLIP_LO, V0
from cogtestbed.registry import get_experiment
from cogtestbed.simulation import simulate


def scan_model(trials, model):  # type: ignore[no-untyped-def]
    subjects, _, d = pool_model_arrays(model, trials)
    parameters = model.parameters
    n = len(subjects)
    t_n = len(d["action"]) // n
    act = d["action"].reshape(n, t_n).T
    cas = d["casino"].reshape(n, t_n).T
    rew = d["reward"].reshape(n, t_n).T
    with pm.Model(coords={"subject": subjects}) as m:
        th = subject_parameters(parameters, True)
        ap, an, b = th["alpha_pos"], th["alpha_neg"], th["beta"]
        idx = pt.arange(n)

        def step(a, c, r, v, ap, an, b):  # type: ignore[no-untyped-def]
            va, vo = v[idx, c, a], v[idx, c, 1 - a]
            logp = -pt.softplus(-b * (va - vo))
            delta = r - va
            rate = pt.switch(delta > 0, ap, an)
            return pt.set_subtensor(v[idx, c, a], va + rate * delta), pt.clip(
                logp, np.log(CLIP_LO), np.log(CLIP_HI))

        v0 = pt.full((n, 4, 2), V0)
        (_, lls), _ = pytensor.scan(step, sequences=[pt.as_tensor(act), pt.as_tensor(cas),
                                                     pt.as_tensor(rew)], outputs_info=[v0, None],
                                     non_sequences=[ap, an, b])
        pm.Potential("ll", lls.sum())
    return m


def timed(m):  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    f = m.logp_dlogp_function(ravel_inputs=True, mode="NUMBA")
    f.set_extra_values({})
    compile_s = time.perf_counter() - start
    x = np.zeros(sum(np.size(v) for v in m.initial_point().values()))
    f(x)
    start = time.perf_counter()
    k = 200
    for _ in range(k):
        f(x)
    return compile_s, (time.perf_counter() - start) / k * 1e6


def main() -> None:
    exp = get_experiment("instrumental-learning")
    model = exp.model("rw-pm")
    rng = np.random.default_rng(0)
    trials = simulate(exp, "rw-pm", 50, 0, {"alpha_pos": rng.uniform(0.1, 0.9, 50),
                                             "alpha_neg": rng.uniform(0.1, 0.9, 50)})
    for name, m in (("numba-op", model.pymc_model(trials)),
                    ("scan", scan_model(trials, model))):
        c, us = timed(m)
        print(json.dumps({"formulation": name, "compile_s": round(c, 1),
                          "logp_dlogp_us": round(us)}), flush=True)


if __name__ == "__main__":
    main()
