#!/bin/bash
# run the slow doc blocks page by page, one pytest process at a time
cd /work/k72 && export PYTHONPATH=/work/k72:/work/k72/notes72 PATH=/work/main/.venv/bin:$PATH K72_LOG=/work/k72/notes72/blocks.log
for page in "$@"; do
  ids=$(python - "$page" <<'PY'
import sys; sys.path.insert(0,'tests')
from pathlib import Path
from doc_blocks import blocks, ROOT
page, _, line = sys.argv[1].partition(":")
print(" ".join(f"tests/test_doc_blocks.py::test_a_doc_block_runs[{b.id}]" for b in blocks(ROOT/page) if b.kind=="slow" and (not line or str(b.line)==line)))
PY
)
  [ -z "$ids" ] && continue
  echo "== $page $(date -u +%T) $(uptime)" >> $K72_LOG
  nice pytest -q -p no:cacheprovider -p cpu_plugin -m "slow or not slow" $ids > notes72/out_$(echo $page | tr / _).txt 2>&1
  echo "== $page done rc=$? $(date -u +%T)" >> $K72_LOG
done
