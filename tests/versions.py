"""The exact package versions every artefact records (issue 37): one assertion, used by the tests of
trial manifests, run.json, plan.json, study summaries and posterior.nc."""

from __future__ import annotations

from collections.abc import Mapping
from importlib import metadata

#: What issue 37 names, beside the Python version.
REQUIRED = ("numpy", "scipy", "pandas", "numba", "pymc", "pytensor", "arviz")


def assert_exact_versions(versions: Mapping[str, str]) -> None:
    """``versions`` names every package of :data:`REQUIRED` with its installed version, to the letter."""
    for name in REQUIRED:
        assert versions.get(name) == metadata.version(name), (name, versions.get(name))
    assert versions["python"].count(".") == 2
