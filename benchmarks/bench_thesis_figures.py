"""The collider thesis figures (Dettki 2025) as the point fit reproduces them, to six decimals.

Human RW17 data (cell means, 3p): LOOCV R², b, m, pC (thesis: .937, .239, .630, .529); every
LLM response file (rows, 3p): MAE, RMSE, R² (thesis Table B.19 for gemini-2.5-pro: .024, .052,
.981).  Used to check that a change of optimiser or gradient leaves the figures unchanged.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from cogtestbed.data.causal import import_causaign_responses, import_rw17_human
from cogtestbed.inference.causal import collider_metrics

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "causal"


def main(data: Path = DATA) -> None:
    start = time.perf_counter()
    human = import_rw17_human(data / "human" / "rw17_collider_ce.csv")
    m = collider_metrics(human, per_subject="no")["metrics"]
    print(f"human (cells, {m['scheme']}): LOOCV R2 {m['loocv_r2']:.6f}  b {m['b']:.6f}  m {m['m1']:.6f}  "
          f"pC {m['p_c']:.6f}  RMSE {m['rmse']:.6f}  R2 {m['r2']:.6f}")
    for path in sorted((data / "llm_responses").glob("*.csv")):
        r = collider_metrics(import_causaign_responses(path), scheme="3p", per_subject="no")["metrics"]
        print(f"{path.stem:45s} 3p: MAE {r['mae']:.6f}  RMSE {r['rmse']:.6f}  R2 {r['r2']:.6f}  "
              f"LOOCV R2 {r['loocv_r2']:.6f}  LAD {r['lad']:.6f}")
    print(f"total {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else DATA)
