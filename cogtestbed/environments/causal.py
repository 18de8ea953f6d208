"""The causal collider task C1 → E ← C2 (Rehder & Waldmann 2017; Dettki 2025 / causAIign).

Each judgment asks for P(query = 1 | observed states) on a 0–100 scale.  There are 11 query
types (Roman I–XI, causAIign letters a–k) and **20 items per (domain, counterbalancing) cell**:
every task except I and III comes in two mirror items, one querying C1 given C2 and one querying
C2 given C1 (Rehder & Waldmann 2017; Dettki 2025 App. A.3).  Items are *canonicalised* so that
the queried cause is C1; the Roman task is what every model and metric reads.

==========  ======  =====================================  ==================================
Roman       letter  query (canonical)                      causAIign item order in a cell
==========  ======  =====================================  ==================================
I           i       P(E=1 | C1=0, C2=0)                    17
II          j       P(E=1 | C1=0, C2=1)                    18, 19
III         k       P(E=1 | C1=1, C2=1)                    20
IV          d       P(C1=1 | C2=1)                         7, 8
V           e       P(C1=1 | C2=0)                         9, 10
VI          a       P(C1=1 | E=1, C2=1)                    1, 2
VII         b       P(C1=1 | E=1)                          3, 4
VIII        c       P(C1=1 | E=1, C2=0)                    5, 6
IX          f       P(C1=1 | E=0, C2=1)                    11, 12
X           g       P(C1=1 | E=0)                          13, 14
XI          h       P(C1=1 | E=0, C2=0)                    15, 16
==========  ======  =====================================  ==================================

**Content conditions** (:class:`CausalDesign`): ``rw17`` (the three cover stories economy /
sociology / weather × 4 counterbalancing conditions ppp/pmm/mpm/mmp), ``abstract`` (random
10-character variable names from the three causAIign generators ``abs_alnum_10``,
``abs_all_10``, ``abs_num_symb_10``; pinned to the released names, or fresh random names with
``abstract_names="random"``), each optionally **overloaded** with irrelevant text at the
variable definitions (``d``), the edge explanations (``e``) or both (``de``), the filler being
cross-domain content or length-matched lorem ipsum.  **Prompt types**: ``numeric``, ``cot``
(XML answer with explanation, likelihood and confidence) and ``numeric_conf`` (XML likelihood +
confidence).

**Pinned wording.**  Prompts are causAIign's released ones (repo version "2_v", commit c8ffdcd),
character for character (tests check every row of the released prompt CSVs), not the thesis's
§3.2.1 variant ("Assume you live in a world that works like this:" / "Now suppose you observe
the following:" / "Note that each of the causes can bring about the effect independently.").
Where they disagree the repo wins: the CoT instruction asks for a ``<confidence>`` field, and
Abstract-Overloaded ``de`` is the repo's layout (about 100 lorem words in each variable slot,
no edge filler) rather than the thesis's App. A.1 example.  Filler layouts not released as CSVs
(our defaults): ``d`` puts the filler after each variable definition (cross-domain: the partner
domain's definition of the same slot; lorem: the 30-word control sentence of ``e``); ``de`` with
cross-domain filler fills both slots.

**Episode.**  One subject's sequence of judgments; every judgment is a standalone prompt (as in
causAIign, no history).  ``scope="all"`` (default, the LLM design): a subject answers every
item of every cell (240 judgments for RW17, 480 for RW17-Overloaded), ``scope="cell"`` (the
human design): a subject sees one (domain, counterbalancing) cell and its 20 items; cells are
assigned in balanced blocks.  Item order is shuffled unless ``shuffle=False``.  There is no
feedback: ``reward`` is NaN.

**Action**: the rating in [0, 100] (a float, or a :class:`CausalAnswer` that also carries a
confidence); :meth:`CausalColliderEnv.parse` turns an LLM answer into one.

**Trial-table columns** (one row per judgment): ``subject`` (simulated subject / human ``s`` /
LLM replicate), ``trial`` (presentation position within the subject's session), stimulus fields
``content`` (rw17/abstract), ``overload`` (none/d/e/de), ``filler`` (none/crossdomain/lorem),
``domain`` (economy, sociology, weather or the abstract generator), ``domain_label``
(causAIign's domain name, e.g. ``econ_ovl_e=soc``), ``cntbl_cond``, ``item`` (0–19, causAIign
order within the cell), ``letter`` (a–k), ``task`` (Roman I–XI), ``task_index`` (0–10 for
I–XI), ``query_var`` (X = C1, Y = C2, Z = E as named in the prompt), ``obs_x``/``obs_y``/
``obs_z`` (observed states, −1 = not observed), ``prompt_type``, ``prompt_id`` (causAIign's
prompt id), ``filler_words``; outcome ``action`` = the rating on 0–100 (NaN/NA if invalid) and
``confidence`` (0–100 where the prompt asked for it and the answer gave it).

The items and design are in :mod:`cogtestbed.environments.causal_design`, the prompts' text in
:mod:`cogtestbed.environments.causal_prompts` (from the released materials,
:mod:`cogtestbed.environments.causal_materials`), the answers' parsing in
:mod:`cogtestbed.environments.causal_answers`; this module is the environment, its sessions, prompt
forms and trial table, and every name of those modules is importable from here too.
"""

from __future__ import annotations

import functools
import string
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from gymnasium import spaces

from cogtestbed.environments import causal_materials as M
from cogtestbed.environments.base import (
    ONE_LINE,
    AnswerDefaults,
    Design,
    Outcomes,
    ParseResult,
    Phase,
    Sessions,
    TextEnv,
)
from cogtestbed.environments.causal_answers import CausalAnswer, parse_answer, parse_number
from cogtestbed.environments.causal_design import (
    ABSTRACT_DOMAINS,
    CB_ID_OFFSET,
    CNTBL_CONDS,
    ITEM_TASK,
    ITEMS,
    ITEMS_PER_CELL,
    LETTER_TO_ROMAN,
    ROMAN,
    ROMAN_INDEX,
    RW17_DOMAINS,
    CausalDesign,
    Content,
    Filler,
    Item,
    Overload,
    PromptType,
    canonical_states,
    domain_label,
)
from cogtestbed.environments.causal_prompts import (
    INSTRUCTIONS,
    CellText,
    cell_for,
    cell_text,
    random_names,
    render_item,
)
from cogtestbed.environments.forms import PromptForm, standard_forms
from cogtestbed.schema import TrialSchema
from cogtestbed.tables.causal import EXPERIMENT, SCHEMA
from cogtestbed.trials import finish_table

__all__ = [
    "ABSTRACT_DOMAINS", "CB_ID_OFFSET", "CNTBL_CONDS", "EXPERIMENT", "INSTRUCTIONS", "ITEMS", "ITEMS_PER_CELL",
    "ITEM_TASK", "LETTER_TO_ROMAN", "PROMPT_FORMS", "ROMAN", "ROMAN_INDEX", "RW17_DOMAINS", "SCHEMA", "CausalAnswer",
    "CausalColliderEnv", "CausalDesign", "CausalSessions", "CellText", "Content", "Filler", "Item", "Overload",
    "PromptType", "canonical_states", "cell_for", "cell_text", "domain_label", "filler_words_table",
    "parse_answer", "parse_number", "prompt_ids", "random_names", "render_item", "stimulus_columns",
]

# ----------------------------------------------------------------------------- sessions
@dataclass(frozen=True)
class CausalSessions(Sessions):
    """Pre-drawn parts of N sessions (first axis: subject)."""

    variant: np.ndarray  # (N, T) int64, index into design.variants
    cb: np.ndarray  # (N, T) int64, index into design.cntbl_conds
    item: np.ndarray  # (N, T) int64, 0-19
    names_seed: np.ndarray  # (N,) int64, seed of fresh abstract names (abstract_names="random")


def _cell_of(design: CausalDesign, cell: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(variant, cntbl_cond) indices of cell indices (cells variant-major), by table lookup."""
    variant, cb = np.divmod(np.arange(design.n_cells), len(design.cntbl_conds))
    return variant.take(cell), cb.take(cell)


# -- prompt forms (cogtestbed.environments.forms): form 0 is causAIign's verbatim prompt; the rest
# are this project's rewordings of the frame around the paper's cover stories (the variables,
# mechanisms and observations are the paper's), with every number kept.
_FRAME = PromptForm(1, "paraphrase", "ours: the headings of the variables and causal relationships reworded",
                    replacements=(("Here are some variables:", "These are the variables:"),
                                  ("Here are the causal relationships:", "The causal relationships are these:")))
_TASK = PromptForm(2, "paraphrase", "ours: the task sentence and its scale reworded", patterns=(
    (r"Your task is to estimate how likely it is that (.+?) is present on a scale from 0 to 100, given the "
     r"observations and causal relationships described\. 0 means completely unlikely and 100 means completely "
     r"likely\.",
     r"Given the observations and the causal relationships above, judge how likely it is that \1 is present, "
     r"on a scale from 0 to 100. 0 means it is certainly absent and 100 means it is certainly present."),
))
_ANSWER = PromptForm(3, "paraphrase", "ours: the answer instruction reworded (still one number from 0 to 100)",
                     replacements=((M.NUMERIC_INSTRUCTION,
                                    "Answer with one number from 0 to 100, where 0 means very unlikely and 100 "
                                    "means very likely, and write nothing else: no explanation, no other text."),))


def _cover_story_mapping(shift: int) -> tuple[tuple[str, str], ...]:
    """Each RW17 domain's text (preamble, observation lead, every variable phrase, per
    counterbalancing) mapped to the text of the domain ``shift`` places on in RW17_DOMAINS, all
    the paper's own sentences; only the plain design (no overload) is mapped."""
    design = CausalDesign()
    pairs: dict[str, str] = {}
    for i, domain in enumerate(RW17_DOMAINS):
        target = RW17_DOMAINS[(i + shift) % len(RW17_DOMAINS)]
        for cb in CNTBL_CONDS:
            a, b = cell_text(design, domain, "none", cb), cell_text(design, target, "none", cb)
            found = [(a.preamble, b.preamble), (a.lead, b.lead),
                     *((a.phrase[key], b.phrase[key]) for key in sorted(a.phrase))]
            for old, new in found:
                if pairs.setdefault(old, new) != new:
                    raise AssertionError(f"cover story: {old!r} maps to two texts")
    return tuple(pairs.items())


def _cover_story(form_id: int, shift: int) -> PromptForm:
    turn = ", ".join(f"{d} -> {RW17_DOMAINS[(i + shift) % 3]}" for i, d in enumerate(RW17_DOMAINS))
    return PromptForm(form_id, "cover-story", f"the paper's own cover stories rotated ({turn}): each domain's "
                      "preamble, variables and observation told in another RW17 domain's verbatim sentences, "
                      "same counterbalancing and causal structure (RW17 content without overload; the "
                      "table's domain column keeps the design's domain)", "ours", mapping=_cover_story_mapping(shift),
                      paper_text=True)


PROMPT_FORMS: tuple[PromptForm, ...] = (*standard_forms(
    _FRAME, _TASK, _ANSWER, "ours: headings, task sentence and answer instruction all reworded (forms 1-3)"),
    _cover_story(8, 1), _cover_story(9, 2))


class CausalColliderEnv(TextEnv[CausalDesign, CausalSessions]):
    """The collider task (see module docstring).

    Observation: ``task`` (Roman index 0–10), ``item`` (0–19), ``c1``/``c2``/``e`` (canonical
    observed states, −1 = unknown), ``filler_words``, ``trial``, strings ``task_roman``,
    ``letter``, ``domain``, ``cntbl_cond``, and ``prompt``.  Action: a rating in [0, 100] or a
    :class:`CausalAnswer`.  ``info`` holds the causAIign ``prompt_id`` and the item's raw
    query/observation structure.
    """

    experiment: ClassVar[str] = EXPERIMENT
    prompt_forms: ClassVar[tuple[PromptForm, ...]] = PROMPT_FORMS
    #: One-shot ratings: no feedback, no adaptive design, so lapses apply after the fact.
    answer_independent: ClassVar[bool] = True
    #: A rating on 0–100 (confidence too, where asked); observed states −1 (unobserved), 0, 1.
    table_schema: ClassVar[TrialSchema] = SCHEMA
    design_cls: ClassVar[type[Design]] = CausalDesign
    action_dtype: ClassVar[Any] = np.float64

    @classmethod
    def answer_defaults(cls, design: Design) -> AnswerDefaults:
        """A numeric rating is one line (:data:`ONE_LINE`); causAIign's XML answers are asked "in one
        single line" too but run longer: 64 tokens for likelihood and confidence, 512 with the
        step-by-step explanation (this project's defaults; the thesis states no token limit)."""
        kind = getattr(design, "prompt_type", "numeric")
        if kind == "numeric":
            return ONE_LINE
        limit = 512 if kind == "cot" else 64
        return AnswerDefaults(("\n",), limit, f"this project's default for causAIign's one-line XML answer "
                              f"({kind}): stop at a newline, at most {limit} tokens")

    def __init__(self, design: CausalDesign | None = None, render_mode: str | None = None):
        super().__init__(design, render_mode)
        text = spaces.Text(max_length=64, min_length=0, charset=frozenset(string.printable))
        self.observation_space = spaces.Dict({
            "task": spaces.Discrete(11),
            "item": spaces.Discrete(ITEMS_PER_CELL),
            "c1": spaces.Discrete(3, start=-1),
            "c2": spaces.Discrete(3, start=-1),
            "e": spaces.Discrete(3, start=-1),
            "filler_words": spaces.Discrete(100_000),
            "trial": spaces.Discrete(self.design.n_trials + 1),
            "task_roman": text,
            "letter": text,
            "domain": text,
            "cntbl_cond": text,
            "prompt": self.prompt_space(20_000),
        })
        self.declare_phases(Phase("rating", spaces.Box(0.0, 100.0, shape=(), dtype=np.float64),
                                  self.parse_rating))
        self._cells: dict[tuple[int, int], CellText] = {}

    # -- stochastic design ---------------------------------------------------------------
    @classmethod
    def sample_sessions(cls, design: CausalDesign, n: int, rng: np.random.Generator) -> CausalSessions:
        """Cells (balanced blocks in ``scope="cell"``) and item orders for ``n`` sessions."""
        t = design.n_trials
        if design.scope == "all":  # every session asks every judgment, cell-major before shuffling
            cell = np.repeat(np.arange(design.n_cells), ITEMS_PER_CELL)
            item = np.tile(np.arange(ITEMS_PER_CELL), design.n_cells)
            order = (rng.random((n, t)).argsort(axis=1, kind="stable") if design.shuffle
                     else np.broadcast_to(np.arange(t), (n, t)))
            cell, item = cell.take(order), item.take(order)  # (n, t) each
        else:
            n_blocks = -(-n // design.n_cells)
            blocks = np.concatenate([rng.permutation(design.n_cells) for _ in range(n_blocks)])[:n]
            cell = np.repeat(blocks[:, None], t, axis=1)
            item = np.broadcast_to(np.arange(ITEMS_PER_CELL), (n, t)).copy()
            if design.shuffle:
                perm = rng.random((n, t)).argsort(axis=1, kind="stable")
                cell = np.take_along_axis(cell, perm, axis=1)
                item = np.take_along_axis(item, perm, axis=1)
        variant, cb = _cell_of(design, cell)
        names_seed = rng.integers(0, 2**62, size=n)
        return CausalSessions(variant=variant.astype(np.int64, copy=False), cb=cb.astype(np.int64, copy=False),
                              item=item.astype(np.int64, copy=False),
                              names_seed=names_seed.astype(np.int64, copy=False))

    # -- dynamics --------------------------------------------------------------------------
    def _start(self) -> None:
        self._cells = {}
        self.outcomes.extra["confidence"] = np.full((1, self.max_steps(self.design)), np.nan)

    @property
    def _s(self) -> CausalSessions:
        assert self.session is not None
        return self.session

    def _pos(self) -> int:
        return min(self.t, self.design.n_trials - 1)

    def current_item(self) -> Item:
        return ITEMS[int(self._s.item[0, self._pos()])]

    def current_cell(self) -> CellText:
        t = self._pos()
        key = (int(self._s.variant[0, t]), int(self._s.cb[0, t]))
        if key not in self._cells:
            self._cells[key] = cell_for(self.design, key[0], key[1], int(self._s.names_seed[0]))
        return self._cells[key]

    def _action_value(self, action: Any) -> float:
        """The rating (of a bare number or a :class:`CausalAnswer`), checked against [0, 100]."""
        return float(super()._action_value(action.rating if isinstance(action, CausalAnswer) else action))

    def _play(self, action: Any) -> float:
        return float("nan")  # no feedback in this task

    def _record(self, t: int, action: Any, reward: float) -> None:
        if isinstance(action, CausalAnswer) and action.confidence is not None:
            self.outcomes.extra["confidence"][0, t] = action.confidence

    def _observation(self) -> dict[str, Any]:
        done = self.t >= self.design.n_trials
        item = self.current_item()
        c1, c2, e = canonical_states(item)
        t = self._pos()
        domain, _ = self.design.variants[int(self._s.variant[0, t])]
        return {
            "task": ROMAN_INDEX[item.task],
            "item": int(self._s.item[0, t]),
            "c1": c1, "c2": c2, "e": e,
            "filler_words": self.current_cell().filler_words,
            "trial": self.t,
            "task_roman": item.task,
            "letter": item.letter,
            "domain": domain,
            "cntbl_cond": self.design.cntbl_conds[int(self._s.cb[0, t])],
            "prompt": "(session finished)" if done else self.render_prompt(),
        }

    def _info(self) -> dict[str, Any]:
        t = self._pos()
        item = self.current_item()
        return {"trial": self.t, "prompt_id": int(prompt_ids(self.design, self._s)[0, t]),
                "query_var": item.query, "observed": dict(item.observed)}

    # -- rendering and parsing -------------------------------------------------------------
    def render_prompt(self) -> str:
        return render_item(self.current_cell(), self.current_item(), self.design.prompt_type)

    def parse_rating(self, text: str) -> ParseResult:
        """See :func:`parse_answer` (the design's prompt type and probability-answer policy; the
        prompt is what an echo repeats)."""
        return parse_answer(text, self.design.prompt_type, self.design.probability_answers,
                            (self.shown_prompt(),))

    # -- trial table -----------------------------------------------------------------------
    @classmethod
    def trials_table(
        cls, design: CausalDesign, sessions: CausalSessions, outcomes: Outcomes,
        *, agent: str = "unknown", params: dict[str, np.ndarray] | None = None,
    ) -> pd.DataFrame:
        """One row per judgment (columns in the module docstring)."""
        stimulus = stimulus_columns(design, sessions.variant, sessions.cb, sessions.item)
        conf = outcomes.extra.get("confidence")
        confidence = (_flat(np.full(outcomes.action.shape, np.nan)) if conf is None
                      else np.asarray(conf))
        return finish_table(EXPERIMENT, {**stimulus, "action": np.asarray(outcomes.action, dtype=np.float64),
                                          "confidence": confidence, "reward": outcomes.reward, "valid": outcomes.valid,
                                          "raw_response": outcomes.raw_response, "parse_error": outcomes.parse_error},
                            agent=agent, params=params)




def prompt_ids(design: CausalDesign, sessions: CausalSessions) -> np.ndarray:
    """causAIign's prompt id of every judgment (160 per domain variant)."""
    offs = np.array([CB_ID_OFFSET[c] for c in design.cntbl_conds])
    return 160 * sessions.variant + offs[sessions.cb] + sessions.item + 1


@functools.lru_cache(maxsize=32)
def filler_words_table(design: CausalDesign) -> np.ndarray:
    """Filler words of every (variant, cntbl_cond) cell (read-only; rendered once per design)."""
    table = np.array([[cell_text(design, d, f, c).filler_words for c in design.cntbl_conds]
                      for d, f in design.variants], dtype=np.int64)
    table.setflags(write=False)
    return table


def _flat(values: np.ndarray) -> np.ndarray:
    """A numeric column as a flat array of the table's rows."""
    return values.reshape(-1)


def _cat(codes: np.ndarray, dtype: pd.CategoricalDtype) -> pd.Categorical:
    """A flat categorical from int8 codes already in ``range(len(categories))`` (taken from the
    lookup tables of :func:`_cell_item_tables`), without a validation pass."""
    return pd.Categorical.from_codes(np.asarray(codes).reshape(-1), dtype=dtype, validate=False)


#: The stimulus columns, in table order.
_STIMULUS_ORDER = ("content", "overload", "filler", "domain", "domain_label", "cntbl_cond", "item", "letter", "task",
                   "task_index", "query_var", "obs_x", "obs_y", "obs_z", "prompt_type", "prompt_id", "filler_words")


@functools.lru_cache(maxsize=32)
def _cell_item_tables(design: CausalDesign) -> tuple[dict[str, np.ndarray], dict[str, pd.CategoricalDtype]]:
    """Every stimulus column's value at each (variant, cntbl_cond, item) judgment, indexed by
    ``(variant · n_cntbl + cb) · 20 + item`` (int8 category codes or int64 numbers; read-only),
    and the categorical dtypes (built once per design: a ``CategoricalDtype`` costs ~0.3 ms)."""
    n_cb = len(design.cntbl_conds)
    variant, cb, item = (a.reshape(-1) for a in np.meshgrid(np.arange(len(design.variants)), np.arange(n_cb),
                                                            np.arange(ITEMS_PER_CELL), indexing="ij"))
    doms = [d for d, _ in design.variants]
    fills = [f for _, f in design.variants]
    dom_cats, fill_cats = sorted(set(doms)), sorted(set(fills))
    letters = sorted({it.letter for it in ITEMS})
    offs = np.array([CB_ID_OFFSET[c] for c in design.cntbl_conds])
    obs = {v: np.array([it.state(v) for it in ITEMS], dtype=np.int64) for v in "XYZ"}
    zeros = np.zeros(variant.size, dtype=np.int64)
    codes = {
        "content": zeros, "overload": zeros, "prompt_type": zeros,
        "filler": np.array([fill_cats.index(f) for f in fills])[variant],
        "domain": np.array([dom_cats.index(d) for d in doms])[variant],
        "domain_label": variant, "cntbl_cond": cb,
        "letter": np.array([letters.index(it.letter) for it in ITEMS])[item],
        "task": ITEM_TASK[item],
        "query_var": np.array(["XYZ".index(it.query) for it in ITEMS])[item],
    }
    tables: dict[str, np.ndarray] = {name: np.asarray(v).astype(np.int8) for name, v in codes.items()}
    tables.update({
        "item": item.astype(np.int64), "task_index": ITEM_TASK[item],
        "obs_x": obs["X"][item], "obs_y": obs["Y"][item], "obs_z": obs["Z"][item],
        "prompt_id": 160 * variant + offs[cb] + item + 1,
        "filler_words": filler_words_table(design)[variant, cb],
    })
    for table in tables.values():
        table.setflags(write=False)
    categories = {
        "content": [design.content], "overload": [design.overload], "prompt_type": [design.prompt_type],
        "filler": fill_cats, "domain": dom_cats,
        "domain_label": [domain_label(design, d, f) for d, f in design.variants],
        "cntbl_cond": list(design.cntbl_conds), "letter": letters, "task": list(ROMAN), "query_var": ["X", "Y", "Z"],
    }
    return tables, {name: pd.CategoricalDtype(cats) for name, cats in categories.items()}


def stimulus_columns(design: CausalDesign, variant: np.ndarray, cb: np.ndarray, item: np.ndarray
                     ) -> dict[str, Any]:
    """Stimulus columns of the trial table from (subject, trial) arrays of indices (string
    columns as flat categoricals, numeric ones as flat arrays):
    each column one lookup of the judgment's (variant, cntbl_cond, item) in :func:`_cell_item_tables`."""
    tables, dtypes = _cell_item_tables(design)
    judgment = np.asarray(variant, dtype=np.int64) * len(design.cntbl_conds)
    judgment += np.asarray(cb, dtype=np.int64)
    judgment *= ITEMS_PER_CELL
    judgment += np.asarray(item, dtype=np.int64)
    flat = judgment.reshape(-1)
    return {name: _cat(tables[name].take(flat), dtypes[name]) if name in dtypes else _flat(tables[name].take(flat))
            for name in _STIMULUS_ORDER}
