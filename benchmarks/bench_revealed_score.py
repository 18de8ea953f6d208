"""Exact scoring of 500 RevB items (up to 34 outcomes each) with the tiny local model on CPU.

Target: <= 30 s (batched scoring: one forward pass of the context, then every continuation at
once on its KV cache).  torch runs single-threaded here: the tiny model's matrices are 32 wide,
so intra-op threads only add hand-off cost on a shared machine.  ``cpu_seconds`` (process
time) is printed beside the wall clock: on a loaded machine it is the better estimate of the
wall time on an idle core.
"""

from __future__ import annotations

import json
import time

import torch

from cogtestbed.environments.revealed import RevealedDesign, continuations
from cogtestbed.llm_adapters.clients.hf import HFClient


def main() -> None:
    torch.set_num_threads(1)
    client = HFClient.tiny_random(device="cpu")
    items = RevealedDesign().items
    batch = (items + items)[:500]
    client.score(batch[0].context, continuations(batch[0]), raw=True)
    start, cpu = time.perf_counter(), time.process_time()
    n_out = 0
    for it in batch:
        n_out += len(client.score(it.context, continuations(it), raw=True).scores)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    print(json.dumps({"bench": "revealed scoring, tiny model, CPU", "items": len(batch), "outcomes": n_out,
                      "max_outcomes": max(it.n_outcomes for it in batch), "seconds": round(seconds, 2),
                      "cpu_seconds": round(cpu, 2),
                      "target_seconds": 30}))


if __name__ == "__main__":
    main()
