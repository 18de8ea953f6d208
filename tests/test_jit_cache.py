"""Light loads from numba's on-disk cache: same results, no context refresh, compiling unchanged.

Each step runs in a fresh interpreter (a test process has long refreshed numba's contexts): the
first fills an on-disk cache, the second loads from it with :func:`light_cache_loads` on, runs the
loaded kernel (NRT arrays, a typed dict: the hash-secret symbols, numba's random generator),
checks numba's typing registries were never installed, then compiles a new function in the same
process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

KERNELS = '''
import numpy as np
from numba import njit


@njit(cache=True)
def helper(x):
    return np.cumsum(x) * 2.0


@njit(cache=True)
def kernel(x):
    counts = {0: 0}  # a typed dict (hashing)
    for v in x:
        k = int(v) % 3
        counts[k] = counts.get(k, 0) + 1
    out = np.empty(x.shape[0] + 4)
    out[: x.shape[0]] = helper(x)
    for k in range(3):
        out[x.shape[0] + k] = counts.get(k, 0)
    np.random.seed(7)  # numba's own generator state
    out[-1] = np.random.random()
    return out


@njit(cache=True)
def bad(n):
    return np.empty(n)  # a negative size raises from numba's own implementation
'''

PROBE = '''
import json, sys
import numpy as np
from cogtestbed.jit_cache import light_cache_loads
light = sys.argv[1] == "light" and light_cache_loads() and light_cache_loads()  # idempotent
import kernels
from numba import njit
from numba.core.registry import cpu_target
x = np.arange(7.0) * 1.5
out = {"light": light, "result": kernels.kernel(x).tolist(), "hits": sum(kernels.kernel.stats.cache_hits.values()),
       "registries_after_load": len(cpu_target.typing_context._registries)}
try:
    kernels.bad(-1)
except ValueError as exc:
    out["error"] = str(exc)
out["numba_np_imported"] = sorted(m for m in ("numba.np.arraymath", "numba.np.arrayobj") if m in sys.modules)
import pickle
from numba.core.environment import Environment
envs = [e for e in list(Environment._memo.values()) if e.can_cache()]
out["env_modules"] = sorted({e.globals["__name__"] for e in envs})
out["pickles_name_numba"] = all(b"numba.core.environment" in p and b"_rebuild_env" in p and b"cogtestbed" not in p
                                for p in map(pickle.dumps, envs))
@njit
def fresh(a):
    return a.sum() + 1.0
out["fresh"] = fresh(x)
out["registries_after_compile"] = len(cpu_target.typing_context._registries)
print(json.dumps(out))
'''


def run(mode: str, folder: Path) -> dict[str, object]:
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": f"{folder}{os.pathsep}{root}", "NUMBA_CACHE_DIR": str(folder / "cache")}
    done = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, cwd=folder,
                          env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_light_loads_run_cached_kernels_identically_and_compiling_still_works(tmp_path: Path) -> None:
    (tmp_path / "kernels.py").write_text(KERNELS)
    filled = run("full", tmp_path)  # compiles and saves
    assert filled["hits"] == 0 and filled["light"] is False
    full = run("full", tmp_path)  # numba's own load (refreshes its contexts first)
    light = run("light", tmp_path)
    assert full["hits"] == light["hits"] == 1
    assert light["light"] is True
    assert light["result"] == full["result"] == filled["result"]
    x = [1.5 * i for i in range(7)]
    expected = [2.0 * sum(x[: i + 1]) for i in range(7)] + [sum(int(v) % 3 == k for v in x) for k in range(3)]
    assert light["result"][:-1] == expected
    assert light["fresh"] == full["fresh"] == sum(x) + 1.0
    # numba's load installs its typing registries; the light load ran the kernel without them, and
    # the fresh compilation installed them itself
    assert full["registries_after_load"] > 0
    assert light["registries_after_load"] == 0
    assert light["registries_after_compile"] == full["registries_after_compile"] > 0
    # numba's implementation modules are not imported to rebuild the loaded kernels' environments;
    # errors raised from those implementations read the same, and the environments pickle as numba's
    assert light["error"] == full["error"] == "negative dimensions not allowed"
    assert full["numba_np_imported"] == ["numba.np.arraymath", "numba.np.arrayobj"]
    assert light["numba_np_imported"] == []
    assert "numba.np.arrayobj" in light["env_modules"]
    assert light["env_modules"] == full["env_modules"]
    assert light["pickles_name_numba"] and full["pickles_name_numba"]
