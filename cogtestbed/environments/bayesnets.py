"""Bayesian networks as ground truth for the belief-coherence experiment (Yamin et al. 2026).

A :class:`Network` holds discrete nodes in topological order, their states, parents and CPTs
(numpy arrays of shape ``(*parent cardinalities, cardinality)``).  Exact marginals
``P(query)`` come from variable elimination written as one tensor contraction over the CPTs of
the query's ancestors (barren nodes sum to one and are pruned first; the contraction order is
opt_einsum's greedy elimination order).  The tests check it against pgmpy's
``VariableElimination`` on every shipped network.

Networks:

* BIF files read with pgmpy's ``BIFReader`` (the library the paper used): the expert-built
  networks shipped in ``cogtestbed/data/bayesnets`` (CHILD, ALARM, HEPAR II, ASIA, CANCER; see
  ``ATTRIBUTION.md`` there) or any ``.bif`` / ``.bif.gz`` path;
* ``heart`` and ``diabetes``: the paper's structures (App. C.0.4: Heart 20 nodes / 121 edges in
  tiers; App. D.0.3–D.0.4: Diabetes 22 nodes / 77 edges, its bins and the 28 edges it names, the
  other 49 ours, in ``diabetes_structure.toml``) with CPTs from :func:`logistic_cpt`, a documented
  seeded generator (these are *synthetic* CPTs, not fitted to EchoNext or BRFSS).
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import hashlib
import json
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from cogtestbed.errors import InputError

NETWORK_DIR = Path(__file__).resolve().parent.parent / "data" / "bayesnets"
#: Networks shipped as BIF files in :data:`NETWORK_DIR`.
BIF_NETWORKS = ("child", "alarm", "hepar2", "asia", "cancer")
#: Networks built in code (paper structures, seeded CPTs).
CODE_NETWORKS = ("heart", "diabetes")


class NetworkError(InputError):
    """A network, node or state that does not exist, or a malformed network (one message)."""


@dataclass(frozen=True)
class Network:
    """A discrete Bayesian network (see module docstring)."""

    name: str
    nodes: tuple[str, ...]
    states: Mapping[str, tuple[str, ...]]
    parents: Mapping[str, tuple[str, ...]]
    cpts: Mapping[str, np.ndarray]
    source: str = ""
    _cache: dict[tuple[str, ...], np.ndarray] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        for node in self.nodes:
            shape = (*(len(self.states[p]) for p in self.parents[node]), len(self.states[node]))
            cpt = self.cpts[node]
            if cpt.shape != shape:
                raise NetworkError(f"{self.name}: CPT of {node} has shape {cpt.shape}, expected {shape}")
            if not np.allclose(cpt.sum(axis=-1), 1.0, atol=1e-6):
                raise NetworkError(f"{self.name}: CPT rows of {node} do not sum to one")

    @property
    def n_edges(self) -> int:
        return sum(len(p) for p in self.parents.values())

    def card(self, node: str) -> int:
        return len(self.states[self.check_node(node)])

    def check_node(self, node: str) -> str:
        if node not in self.states:
            raise NetworkError(f"network {self.name!r} has no node {node!r}; nodes: {', '.join(self.nodes)}")
        return node

    def state_index(self, node: str, state: str) -> int:
        states = self.states[self.check_node(node)]
        if state not in states:
            raise NetworkError(f"node {node!r} of {self.name!r} has no state {state!r}; states: {', '.join(states)}")
        return states.index(state)

    def ancestors(self, nodes: Sequence[str]) -> set[str]:
        """``nodes`` and all their ancestors."""
        out: set[str] = set()
        stack = list(nodes)
        while stack:
            n = stack.pop()
            if n not in out:
                out.add(n)
                stack.extend(self.parents[n])
        return out

    def marginal(self, query: Sequence[str]) -> np.ndarray:
        """Exact joint marginal P(query), an array with one axis per query node (in order).

        Variable elimination over the ancestors of ``query`` (barren nodes pruned), as one
        contraction; results are cached per query.
        """
        import opt_einsum

        query = tuple(self.check_node(q) for q in query)
        if len(set(query)) != len(query):
            raise NetworkError(f"query nodes repeat: {query}")
        if query in self._cache:
            return self._cache[query]
        keep = self.ancestors(query)
        index = {n: i for i, n in enumerate(self.nodes)}
        operands: list[Any] = []
        for n in self.nodes:
            if n in keep:
                operands += [self.cpts[n], [index[p] for p in self.parents[n]] + [index[n]]]
        out = np.asarray(opt_einsum.contract(*operands, [index[q] for q in query], optimize="greedy"))
        self._cache[query] = out
        return out

    def to_pgmpy(self) -> Any:
        """The network as a pgmpy ``DiscreteBayesianNetwork`` (for cross-checks and export)."""
        from pgmpy.factors.discrete import TabularCPD
        from pgmpy.models import DiscreteBayesianNetwork

        model = DiscreteBayesianNetwork([(p, n) for n in self.nodes for p in self.parents[n]])
        model.add_nodes_from(self.nodes)
        for n in self.nodes:
            pa = list(self.parents[n])
            values = np.moveaxis(self.cpts[n], -1, 0).reshape(self.card(n), -1)
            model.add_cpds(TabularCPD(n, self.card(n), values, evidence=pa or None,
                                      evidence_card=[self.card(p) for p in pa] or None,
                                      state_names={v: list(self.states[v]) for v in (n, *pa)}))
        return model


# ----------------------------------------------------------------------------- BIF files
def from_pgmpy(model: Any, name: str, source: str = "") -> Network:
    """Convert a pgmpy discrete Bayesian network (CPTs as child-last arrays)."""
    import networkx as nx

    order = tuple(nx.topological_sort(model))
    states: dict[str, tuple[str, ...]] = {}
    parents: dict[str, tuple[str, ...]] = {}
    cpts: dict[str, np.ndarray] = {}
    for node in order:
        cpd = model.get_cpds(node)
        if cpd is None:
            raise NetworkError(f"node {node!r} has no probability table (a truncated or incomplete network?)")
        variables = list(cpd.variables)
        states[node] = tuple(str(s) for s in cpd.state_names[node])
        parents[node] = tuple(variables[1:])
        cpts[node] = np.ascontiguousarray(np.moveaxis(np.asarray(cpd.values, dtype=np.float64), 0, -1))
    return Network(name, order, states, parents, cpts, source)


def network_cache_dir() -> Path:
    """Where parsed BIF files are cached (``$COGTESTBED_NETWORK_CACHE`` or ~/.cache/cogtestbed/networks)."""
    return Path(os.environ.get("COGTESTBED_NETWORK_CACHE", Path.home() / ".cache" / "cogtestbed" / "networks"))


def _cache_paths(p: Path) -> tuple[Path, Path]:
    digest = hashlib.sha256(p.read_bytes()).hexdigest()[:24]
    base = network_cache_dir() / digest
    return base.with_suffix(".json"), base.with_suffix(".npz")


def _save_cached(net: Network, meta: Path, arrays: Path) -> None:
    with contextlib.suppress(OSError):  # a read-only home only loses the speed-up
        meta.parent.mkdir(parents=True, exist_ok=True)
        np.savez(arrays, *(net.cpts[n] for n in net.nodes))
        meta.write_text(json.dumps({"nodes": net.nodes, "states": net.states, "parents": net.parents}))


def _load_cached(meta: Path, arrays: Path, name: str, source: str) -> Network | None:
    if not (meta.exists() and arrays.exists()):
        return None
    try:
        info = json.loads(meta.read_text())
        with np.load(arrays) as data:
            cpts = {n: np.asarray(data[f"arr_{i}"]) for i, n in enumerate(info["nodes"])}
        return Network(name, tuple(info["nodes"]), {k: tuple(v) for k, v in info["states"].items()},
                       {k: tuple(v) for k, v in info["parents"].items()}, cpts, source)
    except (OSError, ValueError, KeyError, NetworkError):
        return None


def read_bif(path: str | Path, name: str | None = None) -> Network:
    """Read a ``.bif`` or ``.bif.gz`` file with pgmpy's BIF reader.

    pgmpy's parser takes seconds on large files, so the parsed network is cached on disk, keyed by
    the file's SHA-256 (:func:`network_cache_dir`); the cache holds exactly what pgmpy read.
    """
    p = Path(path)
    if not p.exists():
        raise NetworkError(f"no BIF file at {p}")
    name = name or p.name.split(".")[0]
    meta, arrays = _cache_paths(p)
    cached = _load_cached(meta, arrays, name, str(p))
    if cached is not None:
        return cached
    try:
        from pgmpy.readwrite import BIFReader
    except ImportError:  # pragma: no cover - pgmpy is a core dependency
        raise NetworkError("reading BIF files needs pgmpy (pip install pgmpy)") from None
    opener = gzip.open if p.suffix == ".gz" else open
    try:
        with opener(p, "rt") as fh:
            text = fh.read()
        model = BIFReader(string=text).get_model()
        net = from_pgmpy(model, name, str(p))
    except NetworkError as exc:
        raise NetworkError(f"{p} is not a complete BIF network: {exc}") from None
    except Exception as exc:  # pgmpy's parser raises anything from a malformed file
        raise NetworkError(f"{p} is not a readable BIF file: {type(exc).__name__}: {exc}") from None
    _save_cached(net, meta, arrays)
    return net


@functools.lru_cache(maxsize=16)
def load_network(name_or_path: str, seed: int = 0) -> Network:
    """A shipped network by name, a code-built one (``heart``, ``diabetes``; ``seed`` of the CPT
    generator) or a BIF file path.  Cached per process."""
    if name_or_path in BIF_NETWORKS:
        return read_bif(NETWORK_DIR / f"{name_or_path}.bif.gz", name_or_path)
    if name_or_path == "heart":
        return build_heart(seed)
    if name_or_path == "diabetes":
        return build_diabetes(seed)
    if name_or_path.endswith((".bif", ".bif.gz")):
        return read_bif(name_or_path)
    raise NetworkError(f"unknown network {name_or_path!r}; choose one of "
                       f"{', '.join(BIF_NETWORKS + CODE_NETWORKS)} or a .bif/.bif.gz path")


# ----------------------------------------------------------------------------- CPT generator
#: Default spread (sd, log-odds) of parent effects in :func:`logistic_cpt`.
EFFECT_SD = 1.0


@dataclass(frozen=True)
class NodeSpec:
    """A node of a code-built network: states (ordered low → high risk when ``ordinal``),
    marginal base distribution and parents (with the sign of each parent's effect)."""

    name: str
    states: tuple[str, ...]
    base: tuple[float, ...]
    parents: tuple[tuple[str, int], ...] = ()
    ordinal: bool = True


def logistic_cpt(rng: np.random.Generator, spec: NodeSpec, specs: Mapping[str, NodeSpec],
                 effect_sd: float = EFFECT_SD) -> np.ndarray:
    """Seeded CPT of ``spec`` given its parents: a cumulative-logit (ordinal) model.

    Each parent contributes an effect per state: for an ordinal parent ``sign·|w|·s/(m−1)`` for
    state ``s`` of ``m`` (w ~ N(0, effect_sd), so risk rises monotonically along the parent's
    states with the edge's sign); for a nominal parent centred N(0, effect_sd) per state.  The
    linear predictor η is the sum over parents, centred over the parent grid; then
    P(child ≤ j | parents) = σ(c_j − η) with cut-points c_j = logit of the cumulative ``base``
    distribution, so the child's states are ordered and its marginal stays near ``base``.
    """
    cards = [len(specs[p].states) for p, _ in spec.parents]
    eta = np.zeros(cards) if cards else np.zeros(())
    for axis, (parent, sign) in enumerate(spec.parents):
        m = cards[axis]
        pspec = specs[parent]
        if pspec.ordinal:
            effect = sign * abs(rng.normal(0.0, effect_sd)) * np.arange(m) / max(m - 1, 1)
        else:
            effect = rng.normal(0.0, effect_sd, size=m)
            effect -= effect.mean()
        shape = [1] * len(cards)
        shape[axis] = m
        eta = eta + effect.reshape(shape)
    eta = eta - eta.mean()
    base = np.asarray(spec.base, dtype=np.float64)
    base = base / base.sum()
    cuts = np.log(np.cumsum(base)[:-1]) - np.log1p(-np.cumsum(base)[:-1])
    cum = 1.0 / (1.0 + np.exp(-(cuts - eta[..., None])))
    cum = np.concatenate([np.zeros((*np.shape(eta), 1)), cum, np.ones((*np.shape(eta), 1))], axis=-1)
    return np.ascontiguousarray(np.diff(cum, axis=-1))


def build_network(name: str, specs: Sequence[NodeSpec], seed: int, *,
                  custom: Mapping[str, np.ndarray] | None = None, source: str = "") -> Network:
    """A network from node specs (topological order) with :func:`logistic_cpt` CPTs."""
    by_name = {s.name: s for s in specs}
    rng = np.random.default_rng(np.random.SeedSequence([seed, len(specs)]))
    cpts: dict[str, np.ndarray] = {}
    for s in specs:
        given = (custom or {}).get(s.name)
        cpts[s.name] = logistic_cpt(rng, s, by_name) if given is None else given
    return Network(name, tuple(s.name for s in specs), {s.name: s.states for s in specs},
                   {s.name: tuple(p for p, _ in s.parents) for s in specs}, cpts, source)


NO_YES = ("no", "yes")


def _binary(name: str, rate: float, parents: Sequence[tuple[str, int]] = ()) -> NodeSpec:
    return NodeSpec(name, NO_YES, (1.0 - rate, rate), tuple(parents))


# -- Heart (EchoNext structure) ----------------------------------------------------------
HEART_DEMOGRAPHICS = ("Age", "Sex", "Location", "Race")
HEART_ECG = ("ECG_LVH", "STT_Abnormal", "QTc_Prolonged", "QRS_Prolonged")
#: The 11 echocardiographic flags of EchoNext and their assumed base rates.
HEART_FLAGS = {
    "LVEF_le45": 0.10, "LV_wall_ge13": 0.08, "AS_mod": 0.04, "AR_mod": 0.02, "MR_mod": 0.05,
    "TR_mod": 0.05, "PR_mod": 0.01, "RV_dysfunction_mod": 0.05, "Pericardial_effusion": 0.02,
    "PASP_ge45": 0.08, "TR_Vmax_ge32": 0.05,
}
#: Leak of the noisy-OR SHD node and the range of its per-flag detection probabilities.
SHD_LEAK, SHD_Q_RANGE = 0.02, (0.9, 0.99)


def heart_specs() -> list[NodeSpec]:
    """Heart network of Yamin et al. (2026, §1): 4 demographic roots; 4 ECG nodes with all
    demographics as parents plus LVH→{QTc, STT, QRS}, STT→{QTc, QRS}, QTc→QRS; 11 echo flags
    with all 8 demographic and ECG nodes as parents; SHD a child of the 11 flags
    (16 + 6 + 88 + 11 = 121 edges)."""
    demo = [
        NodeSpec("Age", ("<50", "50-69", ">=70"), (0.40, 0.35, 0.25)),
        NodeSpec("Sex", ("female", "male"), (0.45, 0.55), ordinal=False),
        NodeSpec("Location", ("outpatient", "inpatient", "emergency department", "procedural"),
                 (0.45, 0.35, 0.12, 0.08), ordinal=False),
        NodeSpec("Race", ("Asian", "Black", "Hispanic", "White", "Other", "Unknown"),
                 (0.04, 0.12, 0.18, 0.38, 0.13, 0.15), ordinal=False),
    ]
    d = [(n, 1) for n in HEART_DEMOGRAPHICS]
    ecg = [
        _binary("ECG_LVH", 0.10, d),
        _binary("STT_Abnormal", 0.30, [*d, ("ECG_LVH", 1)]),
        _binary("QTc_Prolonged", 0.25, [*d, ("ECG_LVH", 1), ("STT_Abnormal", 1)]),
        _binary("QRS_Prolonged", 0.20, [*d, ("ECG_LVH", 1), ("STT_Abnormal", 1), ("QTc_Prolonged", 1)]),
    ]
    de = [*d, *((n, 1) for n in HEART_ECG)]
    flags = [_binary(name, rate, de) for name, rate in HEART_FLAGS.items()]
    shd = _binary("SHD", 0.4, [(f, 1) for f in HEART_FLAGS])
    return [*demo, *ecg, *flags, shd]


def noisy_or_cpt(q: np.ndarray, leak: float) -> np.ndarray:
    """P(child | binary parents) of a leaky noisy-OR: P(no) = (1 − leak) Π_j (1 − q_j)^{x_j}."""
    k = len(q)
    grid = np.indices((2,) * k).reshape(k, -1).T
    p_no = (1.0 - leak) * np.prod(np.where(grid == 1, 1.0 - q, 1.0), axis=1)
    return np.stack([p_no, 1.0 - p_no], axis=-1).reshape((2,) * k + (2,))


def build_heart(seed: int = 0) -> Network:
    """The Heart network (:func:`heart_specs`) with seeded CPTs; SHD is a leaky noisy-OR of the
    flags (EchoNext's SHD is the composite "any flag"), q_j ~ U(SHD_Q_RANGE), leak SHD_LEAK."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, 121]))
    q = rng.uniform(*SHD_Q_RANGE, size=len(HEART_FLAGS))
    return build_network("heart", heart_specs(), seed, custom={"SHD": noisy_or_cpt(q, SHD_LEAK)},
                         source=f"code: Heart structure of Yamin et al. (2026), seeded CPTs (seed {seed})")


# -- Diabetes (BRFSS variables) ----------------------------------------------------------
#: Nodes, bins and edges of the Diabetes network (App. D.0.3–D.0.4), each edge marked as the
#: paper's or ours (the file's header says which and why).
DIABETES_STRUCTURE = NETWORK_DIR / "diabetes_structure.toml"


@functools.lru_cache(maxsize=1)
def diabetes_structure() -> tuple[dict[str, Any], ...]:
    """The nodes of :data:`DIABETES_STRUCTURE` in topological order (name, states, base, ordinal,
    parents as [name, sign, source])."""
    return tuple(tomllib.loads(DIABETES_STRUCTURE.read_text())["nodes"])


def diabetes_specs() -> list[NodeSpec]:
    """Diabetes network of Yamin et al. (2026, App. D): the 21 BRFSS covariates with D.0.3's bins
    and the target Diabetes_binary; 22 nodes and 77 edges, the 28 that D.0.4 names as given
    (GenHlth a hub of 11 edges, Diabetes_binary with parents GenHlth, DiffWalk, Sex, Income and
    children HighBP, HighChol, BMI, Age) and 49 of ours (:data:`DIABETES_STRUCTURE`)."""
    return [NodeSpec(n["name"], tuple(n["states"]), tuple(n["base"]),
                     tuple((p, int(sign)) for p, sign, _ in n["parents"]), bool(n.get("ordinal", True)))
            for n in diabetes_structure()]


def diabetes_edges(source: str) -> set[tuple[str, str]]:
    """The (parent, child) edges of the Diabetes network from ``source`` ("paper" or "ours")."""
    return {(p, n["name"]) for n in diabetes_structure() for p, _, src in n["parents"] if src == source}


def build_diabetes(seed: int = 0) -> Network:
    """The Diabetes network (:func:`diabetes_specs`) with seeded :func:`logistic_cpt` CPTs."""
    return build_network("diabetes", diabetes_specs(), seed,
                         source=f"code: Diabetes structure of Yamin et al. (2026), seeded CPTs (seed {seed})")


# ----------------------------------------------------------------------------- phrasebook
def humanise(name: str) -> str:
    """``HypoxiaInO2`` → ``hypoxia in O2``; ``pain_ruq`` → ``pain ruq`` (acronyms kept)."""
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|_", " ", name).split()
    return " ".join(w if sum(c.isupper() for c in w) > 1 or (w[0].isupper() and any(c.isdigit() for c in w))
                    else w.lower() for w in words)


_AFFIRMATIVE = {"yes", "present", "true", "abnormal", "t"}
_NEGATIVE = {"no", "absent", "false", "normal", "f"}


@dataclass(frozen=True)
class Phrasebook:
    """Natural-language rendering of evidence, the clinical question and the LIE covariate.

    Defaults come from node and state names (:meth:`phrase`); a TOML file overrides them::

        [names]                 # how a node is called ("their <name>")
        LowerBodyO2 = "lower-body oxygen saturation"
        [phrases.Age]           # a verb phrase per state ("There is a patient who <phrase>")
        "0-3_days" = "is 0-3 days old"
        [questions]             # the clinical question per target "node=state"
        "Disease=TGA" = "have transposition of the great arteries"
    """

    names: Mapping[str, str] = field(default_factory=dict)
    phrases: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    questions: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_toml(cls, path: str | Path) -> Phrasebook:
        p = Path(path)
        if not p.exists():
            raise NetworkError(f"no phrasebook at {p}")
        try:
            data = tomllib.loads(p.read_text())
        except tomllib.TOMLDecodeError as exc:
            raise NetworkError(f"phrasebook {p} is not valid TOML: {exc}") from None
        unknown = set(data) - {"names", "phrases", "questions"}
        if unknown:
            raise NetworkError(f"phrasebook {p}: unknown sections {sorted(unknown)} "
                               "(expected names, phrases, questions)")
        return cls(dict(data.get("names", {})), {k: dict(v) for k, v in data.get("phrases", {}).items()},
                   dict(data.get("questions", {})))

    def name(self, node: str) -> str:
        return self.names.get(node, humanise(node))

    def phrase(self, node: str, state: str) -> str:
        """Verb phrase for ``node = state``: "has X" / "does not have X" for yes/no states,
        else "has <node> <state>"."""
        custom = self.phrases.get(node, {}).get(state)
        if custom is not None:
            return custom
        low = state.lower()
        if low in _AFFIRMATIVE and low not in ("abnormal",):
            return f"has {self.name(node)}"
        if low in _NEGATIVE and low != "normal":
            return f"does not have {self.name(node)}"
        return f"has {self.name(node)} {humanise(state) if '_' in state else state}"

    def question(self, node: str, state: str) -> str:
        """The clinical question completing "What is the probability that they …?"."""
        custom = self.questions.get(f"{node}={state}")
        if custom is not None:
            return custom
        if state.lower() in _AFFIRMATIVE:
            return f"have {self.name(node)}"
        return f"have {self.name(node)} {state}"

    def describe(self, evidence: Mapping[str, str]) -> str:
        """"has A, has B, and has C" for an evidence assignment (node order kept)."""
        parts = [self.phrase(n, s) for n, s in evidence.items()]
        if len(parts) <= 1:
            return "".join(parts)
        if len(parts) == 2:
            return f"{parts[0]} and {parts[1]}"
        return ", ".join(parts[:-1]) + ", and " + parts[-1]


def default_phrasebook(network: str) -> Phrasebook:
    """The phrasebook shipped for a network (``<name>.toml`` beside the BIF files), else defaults."""
    path = NETWORK_DIR / f"{network}.toml"
    return Phrasebook.from_toml(path) if path.exists() else Phrasebook()
