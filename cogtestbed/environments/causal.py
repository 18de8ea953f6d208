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
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd
from gymnasium import spaces
from pydantic import model_validator

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
from cogtestbed.environments.forms import PromptForm, standard_forms
from cogtestbed.errors import InputError
from cogtestbed.schema import TrialSchema
from cogtestbed.tables.causal import EXPERIMENT, SCHEMA
from cogtestbed.trials import finish_table

ROMAN = ("I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI")
LETTER_TO_ROMAN = {"i": "I", "j": "II", "k": "III", "d": "IV", "e": "V", "a": "VI", "b": "VII",
                   "c": "VIII", "f": "IX", "g": "X", "h": "XI"}
ROMAN_INDEX = {r: i for i, r in enumerate(ROMAN)}
CNTBL_CONDS = ("ppp", "pmm", "mpm", "mmp")
RW17_DOMAINS = ("economy", "sociology", "weather")
ABSTRACT_DOMAINS = ("abs_alnum_10", "abs_all_10", "abs_num_symb_10")
#: causAIign prompt ids: 160 per domain variant, these offsets per counterbalancing condition.
CB_ID_OFFSET = {"ppp": 0, "pmm": 60, "mpm": 100, "mmp": 120}
ITEMS_PER_CELL = 20


@dataclass(frozen=True)
class Item:
    """One of the 20 items of a cell: letter, queried variable and ordered observations."""

    letter: str
    query: str  # "X", "Y" or "Z"
    observed: tuple[tuple[str, int], ...]  # (variable, state) in the order the prompt names them

    @property
    def task(self) -> str:
        return LETTER_TO_ROMAN[self.letter]

    def state(self, var: str) -> int:
        return dict(self.observed).get(var, -1)


def _items() -> tuple[Item, ...]:
    """The 20 items in causAIign's order (read off the released prompts)."""
    out = []
    for letter, eff in (("a", 1), ("b", 1), ("c", 1), ("d", None), ("e", None),
                        ("f", 0), ("g", 0), ("h", 0)):
        other = {"a": 1, "b": None, "c": 0, "d": 1, "e": 0, "f": 1, "g": None, "h": 0}[letter]
        for q, alt in (("X", "Y"), ("Y", "X")):
            obs: list[tuple[str, int]] = []
            if eff is not None:
                obs.append(("Z", eff))
            if other is not None:
                obs.append((alt, other))
            out.append(Item(letter, q, tuple(obs)))
    out.append(Item("i", "Z", (("X", 0), ("Y", 0))))
    out.append(Item("j", "Z", (("X", 0), ("Y", 1))))
    out.append(Item("j", "Z", (("Y", 0), ("X", 1))))
    out.append(Item("k", "Z", (("X", 1), ("Y", 1))))
    return tuple(out)


ITEMS = _items()
#: Roman task index (0–10) of each of the 20 items.
ITEM_TASK = np.array([ROMAN_INDEX[it.task] for it in ITEMS], dtype=np.int64)


def canonical_states(item: Item) -> tuple[int, int, int]:
    """(C1, C2, E) states with C1 = the queried cause (for E queries, C1 = the absent cause of II)."""
    if item.query == "Y":
        return item.state("Y"), item.state("X"), item.state("Z")
    if item.query == "Z" and item.state("X") == 1 and item.state("Y") == 0:
        return 0, 1, -1  # II's mirror item: canonically C1 = the absent cause
    return item.state("X"), item.state("Y"), item.state("Z")


# ----------------------------------------------------------------------------- design
Content = Literal["rw17", "abstract"]
Overload = Literal["none", "d", "e", "de"]
Filler = Literal["crossdomain", "lorem"]
PromptType = Literal["numeric", "cot", "numeric_conf"]


class CausalDesign(Design):
    """Design of a collider experiment (defaults: causAIign's RW17 numeric, 240 judgments)."""

    content: Content = "rw17"
    overload: Overload = "none"
    #: Filler sources of an overloaded design (each is a separate set of domain variants).
    fillers: tuple[Filler, ...] = ("crossdomain", "lorem")
    #: Domains (default: the content condition's three).
    domains: tuple[str, ...] | None = None
    cntbl_conds: tuple[str, ...] = CNTBL_CONDS
    prompt_type: PromptType = "numeric"
    scope: Literal["all", "cell"] = "all"
    shuffle: bool = True
    #: Abstract variable names: causAIign's released ones, or fresh random ones per subject.
    abstract_names: Literal["causaign", "random"] = "causaign"
    #: A non-integer answer in (0, 1) (e.g. "0.85"): a rating of 0.85 on the 0–100 scale
    #: ("accept") or an invalid answer that looks like a 0–1 probability ("reject").
    probability_answers: Literal["accept", "reject"] = "accept"
    field_examples: ClassVar[Mapping[str, Any]] = {"domains": RW17_DOMAINS[::2]}

    @model_validator(mode="after")
    def _check(self) -> CausalDesign:
        valid = RW17_DOMAINS if self.content == "rw17" else ABSTRACT_DOMAINS
        for d in self.domain_list:
            if d not in valid:
                raise InputError(f"unknown {self.content} domain {d!r}; choose from {valid}")
        for cb in self.cntbl_conds:
            if cb not in CNTBL_CONDS:
                raise InputError(f"unknown counterbalancing condition {cb!r}; choose from {CNTBL_CONDS}")
        if self.overload != "none":
            if not self.fillers:
                raise InputError("an overloaded design needs at least one filler source")
            if self.content == "abstract" and "crossdomain" in self.fillers:
                raise InputError("abstract content has no cross-domain filler; use fillers=('lorem',)")
        if len(set(self.domain_list)) != len(self.domain_list) or not self.domain_list:
            raise InputError("domains must be distinct and non-empty")
        return self

    @property
    def domain_list(self) -> tuple[str, ...]:
        if self.domains is not None:
            return self.domains
        return RW17_DOMAINS if self.content == "rw17" else ABSTRACT_DOMAINS

    @property
    def variants(self) -> tuple[tuple[str, str], ...]:
        """(domain, filler) pairs; filler "none" unless overloaded (causAIign's domain order)."""
        if self.overload == "none":
            return tuple((d, "none") for d in self.domain_list)
        return tuple((d, f) for f in self.fillers for d in self.domain_list)

    @property
    def n_cells(self) -> int:
        return len(self.variants) * len(self.cntbl_conds)

    @property
    def n_trials(self) -> int:
        return ITEMS_PER_CELL * (self.n_cells if self.scope == "all" else 1)

    # -- named variants ----------------------------------------------------------------
    @classmethod
    def rw17(cls, **kw: Any) -> CausalDesign:
        """RW17 cover stories (causAIign ``rw17_indep_causes``), 240 judgments."""
        return cls(content="rw17", **kw)

    @classmethod
    def abstract(cls, **kw: Any) -> CausalDesign:
        """Random-string variables (causAIign ``random_abstract``), 240 judgments."""
        return cls(content="abstract", **kw)

    @classmethod
    def rw17_overloaded(cls, **kw: Any) -> CausalDesign:
        """RW17-Overloaded as in the thesis: edge filler, cross-domain + lorem, 480 judgments."""
        kw.setdefault("fillers", ("crossdomain", "lorem"))
        return cls(content="rw17", overload="e", **kw)

    @classmethod
    def abstract_overloaded(cls, **kw: Any) -> CausalDesign:
        """Abstract-Overloaded as released: ``de`` lorem (≈100 words per variable slot); the
        released file orders its domains all, alnum, num_symb (prompt ids follow that order)."""
        kw.setdefault("domains", ("abs_all_10", "abs_alnum_10", "abs_num_symb_10"))
        return cls(content="abstract", overload="de", fillers=("lorem",), **kw)

    @classmethod
    def human(cls, **kw: Any) -> CausalDesign:
        """Rehder & Waldmann's human design: one cell per subject, its 20 items in random order."""
        return cls(content="rw17", scope="cell", **kw)


def domain_label(design: CausalDesign, domain: str, filler: str) -> str:
    """causAIign's name of a domain variant (e.g. ``econ_ovl_e=soc``, ``abs_all_10_overloaded_de``)."""
    if design.overload == "none":
        return domain
    if design.content == "abstract":
        return f"{domain}_overloaded_{design.overload}"
    partner = "ctl" if filler == "lorem" else M.SHORT_LABEL[M.CROSS_DOMAIN_PARTNER[domain]]
    return f"{M.SHORT_LABEL[domain]}_ovl_{design.overload}={partner}"


# ----------------------------------------------------------------------------- rendering
@dataclass(frozen=True)
class CellText:
    """Everything item-independent about one (domain variant, counterbalancing) cell."""

    preamble: str  # intro … independence paragraph, ending before the observation
    lead: str  # observation lead-in
    phrase: dict[tuple[str, int], str]  # (var, state) -> "low interest rates"
    filler_words: int


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def random_names(rng: np.random.Generator, generator: str) -> tuple[str, str, str]:
    """Three fresh 10-character names from one of causAIign's generators."""
    alnum = string.ascii_letters + string.digits
    symbols = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
    alphabet = {"abs_alnum_10": alnum, "abs_all_10": alnum + symbols,
                "abs_num_symb_10": string.digits + symbols}[generator]
    chars = np.array(list(alphabet))
    return tuple("".join(rng.choice(chars, 10)) for _ in range(3))  # type: ignore[return-value]


@dataclass
class _CellParts:
    """The pieces a cell's preamble is assembled from (one entry per variable X, Y, Z or link)."""

    names: tuple[str, ...]
    intro: str
    detailed: list[str]
    plural: str
    lead: str
    phrase: dict[tuple[str, int], str]
    mechanisms: list[str]
    d_fill: list[str]
    e_fill: list[str]


_VARS = ("X", "Y", "Z")


def _rw17_parts(design: CausalDesign, domain: str, filler: str, cb: str) -> _CellParts:
    """The pieces of an RW17 (real-world domain) cell, with cross-domain overload fillers."""
    overloaded = design.overload != "none"
    dom: dict[str, Any] = M.RW17_DOMAINS[domain]
    names = tuple(dom["names"])
    present = dom["cb"][cb]["present"]
    phrase = {}
    for v, n in zip(_VARS, names, strict=True):
        phrase[(v, 1)] = f"{present[v]} {n}"
        phrase[(v, 0)] = f"normal {n}"
    parts = _CellParts(names, dom["intro"], list(dom["detailed"]), "systems" if overloaded else dom["plural"],
                       "You are currently observing: " if overloaded else dom["observation_lead"], phrase,
                       list(dom["cb"][cb]["mechanisms"]), ["", "", ""], ["", ""])
    if overloaded and filler == "crossdomain":
        partner: dict[str, Any] = M.RW17_DOMAINS[M.CROSS_DOMAIN_PARTNER[domain]]
        if "d" in design.overload:
            parts.d_fill = list(partner["detailed"])
        if "e" in design.overload:
            parts.e_fill = list(partner["cb"][cb]["mechanisms"])
    return parts


def _abstract_parts(domain: str, cb: str, names: tuple[str, str, str] | None) -> _CellParts:
    """The pieces of an abstract-variable cell (the senses of ``cb`` name present/absent)."""
    if names is None:
        names = tuple(M.ABSTRACT_NAMES[domain])  # type: ignore[assignment]
    assert names is not None
    phrase = {}
    for v, n, sense in zip(_VARS, names, cb, strict=True):
        pres, absent = M.ABSTRACT_SENSES[v][sense]
        phrase[(v, 1)] = f"{pres} {n}"
        phrase[(v, 0)] = f"{absent} {n}"
    return _CellParts(names, M.ABSTRACT_INTRO.format(X=names[0], Y=names[1], Z=names[2]), ["", "", ""],
                      "systems", "You are currently observing: ", phrase, ["", ""], ["", "", ""], ["", ""])


def _lorem_fill(design: CausalDesign, parts: _CellParts) -> None:
    """Lorem-ipsum overload: long blocks in the variable (d) and/or mechanism (e) slots."""
    if design.overload == "de":  # the released layout: long blocks in the variable slots only
        parts.d_fill = list(M.LOREM_D)
    else:
        if "d" in design.overload:
            parts.d_fill = [M.LOREM_E] * 3
        if "e" in design.overload:
            parts.e_fill = [M.LOREM_E] * 2


def _preamble(p: _CellParts) -> str:
    """The cell's fixed preamble: intro, variables, causal links and the independence clause."""
    var_parts = []
    for i, v in enumerate(_VARS):
        head = " ".join(x for x in (p.detailed[i], p.d_fill[i]) if x)
        n = p.names[i]
        pres_word = p.phrase[(v, 1)][: -len(n) - 1]
        abs_word = p.phrase[(v, 0)][: -len(n) - 1]
        sentence = f"Some {p.plural} have {pres_word} {n}. Others have {abs_word} {n}."
        var_parts.append(f"{head} {sentence}" if head else sentence)
    vx, vy, vz = p.phrase[("X", 1)], p.phrase[("Y", 1)], p.phrase[("Z", 1)]
    causal_parts = []
    for i, vc in enumerate((vx, vy)):
        causal_parts.append(f"{_cap(vc)} causes {vz}.")
        causal_parts.extend(x for x in (p.mechanisms[i], p.e_fill[i]) if x)
    indep = (f"Both {vx} and {vy} can each cause {vz} on their own. That is, it's not the case "
             f"that both of these have to be present in order for {vz} to be present. Rather, "
             f"{vx} can independently cause {vz} on their own, and {vy} can independently cause "
             f"{vz} on their own as well.")
    return (f"{p.intro} Here are some variables: {' '.join(var_parts)}  Here are the causal "
            f"relationships: {' '.join(causal_parts)} {indep}")


def cell_text(design: CausalDesign, domain: str, filler: str, cb: str,
              names: tuple[str, str, str] | None = None) -> CellText:
    """Render the fixed part of a cell's prompts (see module docstring for the layouts)."""
    parts = (_rw17_parts(design, domain, filler, cb) if design.content == "rw17"
             else _abstract_parts(domain, cb, names))
    if design.overload != "none" and filler == "lorem":
        _lorem_fill(design, parts)
    words = sum(len(x.split()) for x in (*parts.d_fill, *parts.e_fill) if x)
    return CellText(_preamble(parts), parts.lead, parts.phrase, words)


INSTRUCTIONS = {"numeric": M.NUMERIC_INSTRUCTION, "cot": M.COT_INSTRUCTION,
                "numeric_conf": M.NUMERIC_CONF_INSTRUCTION}


def render_item(cell: CellText, item: Item, prompt_type: str) -> str:
    """The full prompt of one item (causAIign's released wording)."""
    obs = " and ".join(cell.phrase[o] for o in item.observed)
    query = cell.phrase[(item.query, 1)]
    return (f"{cell.preamble} {cell.lead}{obs}. Your task is to estimate how likely it is that "
            f"{query} is present on a scale from 0 to 100, given the observations and causal "
            f"relationships described. 0 means completely unlikely and 100 means completely "
            f"likely. {INSTRUCTIONS[prompt_type]}")


# ----------------------------------------------------------------------------- parsing
_NUM = r"[-+]?(?:\d+(?:\.\d+)?|\.\d+)"
_FULL = re.compile(rf"^\s*({_NUM})\s*%?\s*\.?\s*$")
_ANY = re.compile(rf"(?<![\w.]){_NUM}(?![\w])")
_RESPONSE = re.compile(r"<response>(.*?)</response>", re.DOTALL | re.IGNORECASE)
_FIELD = re.compile(r"<(\w+?)>(.*?)</\1>", re.DOTALL)


@dataclass(frozen=True)
class CausalAnswer:
    """A parsed answer: the rating (0–100) and, where asked for, confidence and explanation."""

    rating: float
    confidence: float | None = None
    explanation: str | None = None

    def __float__(self) -> float:
        return float(self.rating)


def _check_range(value: float, text: str, probability_answers: str) -> str | None:
    if not np.isfinite(value) or value < 0.0 or value > 100.0:
        return f"rating {text!r} is outside [0, 100]"
    if probability_answers == "reject" and 0.0 < value < 1.0 and value != int(value):
        return f"rating {text!r} looks like a probability on the 0-1 scale, not 0-100"
    return None


def parse_number(text: str, probability_answers: str = "accept", strict: bool = False
                 ) -> tuple[float | None, str | None]:
    """A single rating in [0, 100] from ``text``: (value, None) or (None, reason).

    Accepted: the whole answer is one number (integer or decimal, optional ``%`` and final
    period); else the last non-empty line is one number (reasoning followed by the answer);
    else (not ``strict``) the answer contains exactly one number.  Several numbers, no number,
    values outside [0, 100] or an API error message are invalid, with the reason.  Unlike
    causAIign's ``\\b(\\d{1,3})\\b``, "0.85" is 0.85 (not 0) and "72.5" is 72.5 (not 72).
    """
    if text is None or not str(text).strip():
        return None, "empty answer"
    s = str(text).strip()
    if s.lower().startswith("error"):
        return None, f"answer is an error message: {s[:60]!r}"
    candidates = [s]
    lines = [ln for ln in s.splitlines() if ln.strip()]
    if len(lines) > 1:
        candidates.append(lines[-1])
    for cand in candidates:
        m = _FULL.match(cand.replace("**", ""))
        if m:
            value = float(m.group(1))
            err = _check_range(value, m.group(1), probability_answers)
            return (None, err) if err else (value, None)
    if strict:
        return None, f"expected a single number in [0, 100], got {s[:60]!r}"
    if re.fullmatch(r"\s*\d+,\d+\s*%?\s*", s):
        return None, f"decimal comma in {s[:60]!r}; expected a number such as 72.5"
    numbers = _ANY.findall(s)
    if not numbers:
        return None, f"no number in answer {s[:60]!r}"
    if len(numbers) > 1:
        shown = ", ".join(numbers[:4])
        return None, f"several numbers ({shown}{', ...' if len(numbers) > 4 else ''}) in a numeric answer"
    value = float(numbers[0])
    err = _check_range(value, numbers[0], probability_answers)
    return (None, err) if err else (value, None)


def parse_answer(text: str, prompt_type: str, probability_answers: str = "accept") -> ParseResult:
    """Parse an answer to a collider prompt into a :class:`CausalAnswer` (or a failure).

    ``numeric``: :func:`parse_number`.  ``cot`` / ``numeric_conf``: the ``<response>…</response>``
    block (causAIign's regexes; the whole text if the wrapper is missing), its
    ``<likelihood>`` field must be exactly one number in [0, 100]; ``<confidence>`` is read
    when present (an unreadable confidence is recorded as missing, the rating stays valid) and
    ``<explanation>`` is kept.
    """
    if prompt_type == "numeric":
        value, err = parse_number(text, probability_answers)
        if err is not None:
            return ParseResult.failure(err)
        return ParseResult.success(CausalAnswer(float(value)))  # type: ignore[arg-type]
    if text is None or not str(text).strip():
        return ParseResult.failure("empty answer")
    s = str(text)
    block = _RESPONSE.search(s)
    fields = {k.lower(): v.strip() for k, v in _FIELD.findall(block.group(1) if block else s)}
    if "likelihood" not in fields:
        if s.strip().lower().startswith("error"):
            return ParseResult.failure(f"answer is an error message: {s.strip()[:60]!r}")
        return ParseResult.failure("no <likelihood> field in the XML answer")
    value, err = parse_number(fields["likelihood"], probability_answers, strict=True)
    if err is not None:
        return ParseResult.failure(f"<likelihood>: {err}")
    conf = None
    if "confidence" in fields:
        c, cerr = parse_number(fields["confidence"], "accept", strict=True)
        conf = c if cerr is None else None
    return ParseResult.success(CausalAnswer(float(value), conf, fields.get("explanation")))  # type: ignore[arg-type]


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
        """See :func:`parse_answer` (the design's prompt type and probability-answer policy)."""
        return parse_answer(text, self.design.prompt_type, self.design.probability_answers)

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


def cell_for(design: CausalDesign, variant: int, cb: int, names_seed: int = 0) -> CellText:
    domain, filler = design.variants[variant]
    names = None
    if design.content == "abstract" and design.abstract_names == "random":
        names = random_names(np.random.default_rng([names_seed, variant]), domain)
    return cell_text(design, domain, filler, design.cntbl_conds[cb], names)


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
