"""The collider task's prompts, character for character causAIign's released ones (repo version
"2_v", commit c8ffdcd): the item-independent text of a cell (:func:`cell_text`: preamble,
observation lead, variable phrases; RW17 cover stories or abstract names, with the ``d``/``e``/``de``
overload fillers) and the full prompt of one item (:func:`render_item`).  The layouts and where
they depart from the thesis are described in :mod:`cogtestbed.environments.causal`.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from typing import Any

import numpy as np

from cogtestbed.environments import causal_materials as M
from cogtestbed.environments.causal_design import CausalDesign, Item


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




def cell_for(design: CausalDesign, variant: int, cb: int, names_seed: int = 0) -> CellText:
    """The text of cell (``variant``, ``cb``) of ``design``; fresh abstract names (where the design
    asks for them) drawn from ``names_seed`` and the variant."""
    domain, filler = design.variants[variant]
    names = None
    if design.content == "abstract" and design.abstract_names == "random":
        names = random_names(np.random.default_rng([names_seed, variant]), domain)
    return cell_text(design, domain, filler, design.cntbl_conds[cb], names)
