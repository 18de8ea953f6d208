"""The collider task's items and design (Rehder & Waldmann 2017; Dettki 2025 / causAIign): the 20
items of a (domain, counterbalancing) cell, each canonicalised so that the queried cause is C1
(:func:`canonical_states`), their Roman task types I–XI, and :class:`CausalDesign` (content,
overload, fillers, prompt type, scope) with the named variants of the thesis and the released
prompts.  The environment is :mod:`cogtestbed.environments.causal` (which re-exports every name
here); the layouts are described in its module docstring.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import model_validator

from cogtestbed.environments import causal_materials as M
from cogtestbed.environments.base import Design
from cogtestbed.errors import InputError

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


def _refuse_unknown(names: tuple[str, ...], valid: tuple[str, ...], what: str) -> None:
    for name in names:
        if name not in valid:
            raise InputError(f"unknown {what} {name!r}; choose from {valid}")


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
        _refuse_unknown(self.domain_list, valid, f"{self.content} domain")
        _refuse_unknown(self.cntbl_conds, CNTBL_CONDS, "counterbalancing condition")
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

