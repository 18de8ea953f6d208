"""The coin-guess experiment spec: every piece named, nothing registered by hand, and the
experiment's name declared here only (the environment, agents and model take it from the spec).

``cogtestbed.check(SPEC)`` runs the conformance suite on it, ``cogtestbed.recover(SPEC, "softmax")``
a recovery study; a distribution that declares the entry point
``[project.entry-points."cogtestbed.experiments"] coin-guess = "coinguess.spec:SPEC"`` adds it to
``cogtestbed list``, the command line and every study.
"""

from cogtestbed.extend import ExperimentSpec, MetricsSpec, StudyDecl, lazy, same_name_generators

from .models import MODELS, coin_metrics
from .tables.coin import SCHEMA

_PKG = __name__.rpartition(".")[0]

SPEC = ExperimentSpec(
    name="coin-guess",
    citation="A made-up example (cogtestbed docs, 'Adding an experiment').",
    description="guess which of two biased coins was flipped from its number of heads",
    env_cls=lazy(f"{_PKG}.environments.coin:CoinGuessEnv"),
    agents=lazy(f"{_PKG}.agents:AGENTS"),
    table_schema=SCHEMA,
    models=MODELS,
    generators=same_name_generators(MODELS),
    metrics=MetricsSpec(coin_metrics, unit="per_subject", headline=("accuracy", "agreement")),
    importers={},
    pooling_unit="subject",
    trials_field="n_guesses",
    studies=(StudyDecl("recovery", "beta from 40 guesses", model="softmax", trials=(40,)),),
)
