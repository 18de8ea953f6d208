"""The settings every conformance check reads (:class:`CheckConfig`), apart from the suite so
that the checks of :mod:`~cogtestbed.conformance.table_checks` can name it."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

#: Environment variable naming the directory of published data the importer check reads.
DATA_DIR_ENV = "COGTESTBED_DATA_DIR"
#: Most steps per session of the quick mode's designs (where ``trials_field`` can lower them).
QUICK_MAX_STEPS = 240


@dataclass(frozen=True)
class CheckConfig:
    """Sizes of the designs the checks play (``quick``: small, for the default test suite)."""

    quick: bool = True
    seed: int = 20240601
    #: Directory of published data for the importer check (None: ``$COGTESTBED_DATA_DIR``).
    data_dir: Path | None = None

    @property
    def n_subjects(self) -> int:
        return 3 if self.quick else 6

    @property
    def design_divisor(self) -> int:
        """Quick mode divides the ``trials_field`` of the default design by this."""
        return 4 if self.quick else 1

    @property
    def probe_steps(self) -> int | None:
        """Steps of a session the prompt and garbage probes play (None: the whole session)."""
        return QUICK_MAX_STEPS if self.quick else None

    def resolved_data_dir(self) -> Path | None:
        if self.data_dir is not None:
            return Path(self.data_dir)
        env = os.environ.get(DATA_DIR_ENV)
        return Path(env) if env else None
