"""Prompt forms: the wordings of one experiment's prompt, a design factor crossed with subjects.

Every environment declares :attr:`~cogtestbed.environments.base.TextEnv.prompt_forms`.  Form 0 is
the paper's (or its released code's) verbatim prompt, exactly what the environment renders; every
other form is **this project's** rewording of it, declared as the literal sentences it replaces
(``replacements``) or regular-expression rewrites (``patterns``) applied to every rendered prompt:

* ``paraphrase``: the instructions or the question said in other words, with the same information
  (every number, label and option kept) and the same answer format (the cue the answer continues
  from is never touched);
* ``option-order``: the options named in another order, each keeping its label, so the paper's
  answer format parses to the same action;
* ``cover-story``: the same task told in another of the paper's own settings.

A form never changes what a synthetic subject reads (the structured observation) nor the
session: it rewrites text only, so a table's sessions, and a synthetic agent's answers, are the
same under every form (conformance check ``prompt_forms``).  Assigning forms to subjects is
:func:`assign_forms` (balanced, seeded); the random offset a form gives a parameter of a
synthetic subject is :func:`form_offsets`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from cogtestbed.errors import InputError

if TYPE_CHECKING:  # numpy is imported where used: a plan's refusal reads this module without it
    import numpy as np

FormKind = Literal["verbatim", "paraphrase", "option-order", "cover-story"]
FORM_KINDS: tuple[str, ...] = ("verbatim", "paraphrase", "option-order", "cover-story")
#: Spawn key of the forms stream of a simulation seed (assignment and offsets): independent of the
#: environment, agent and lapse streams, so a table without forms is unchanged by it.
FORMS_STREAM = 7
#: Column of the trial table holding a row's prompt form (present only where forms were assigned).
FORM_COLUMN = "form"
#: Prefix of the columns holding a row's true form offset of a parameter (unconstrained scale).
OFFSET_PREFIX = "form_offset_"


class FormError(InputError):
    """A request for prompt forms that cannot be met (unknown ids, bad counts, bad SD)."""


@dataclass(frozen=True)
class PromptForm:
    """One wording of an experiment's prompt (see the module docstring).

    ``differs`` says in words what differs from form 0; ``source`` is ``"paper"`` for the verbatim
    prompt and ``"ours"`` for every form this project wrote.  ``replacements`` are ``(verbatim
    text, our text)`` pairs and ``patterns`` ``(regex, replacement)`` pairs, applied in order to
    every text of a prompt (a string, or the ``content`` strings of chat messages).
    """

    id: int
    kind: FormKind
    differs: str
    source: Literal["paper", "ours"] = "ours"
    replacements: tuple[tuple[str, str], ...] = ()
    patterns: tuple[tuple[str, str], ...] = ()
    #: ``(text, new text)`` pairs replaced simultaneously in one pass (longest first), so a
    #: rotation of cover stories (A → B, B → C, C → A) never rewrites its own output; the
    #: conformance check counts the mapping as one rewrite (some pair must find its text).
    mapping: tuple[tuple[str, str], ...] = ()
    #: Whether the new text is the paper's own (verbatim sentences of another of its settings).
    paper_text: bool = False

    def __post_init__(self) -> None:
        if self.kind not in FORM_KINDS:
            raise InputError(f"form {self.id}: kind must be one of {FORM_KINDS}, got {self.kind!r}")
        if (self.kind == "verbatim") != (self.source == "paper"):
            raise InputError(f"form {self.id}: only the verbatim form is the paper's")
        if self.kind == "verbatim" and (self.replacements or self.patterns or self.mapping):
            raise InputError("the verbatim form rewrites nothing")
        if len({old for old, _ in self.mapping}) != len(self.mapping):
            raise InputError(f"form {self.id}: a text is mapped twice")
        for pattern, _ in self.patterns:
            re.compile(pattern)

    def rewrite_text(self, text: str) -> str:
        """``text`` in this form's wording."""
        for old, new in self.replacements:
            text = text.replace(old, new)
        for pattern, repl in self.patterns:
            text = re.sub(pattern, repl, text)
        if self.mapping:
            table = dict(self.mapping)
            text = _mapping_regex(self.mapping).sub(lambda m: table[m.group(0)], text)
        return text

    def apply(self, prompt: Any) -> Any:
        """The prompt (a string, or chat messages whose ``content`` strings are rewritten) in this
        form's wording; form 0 returns ``prompt`` itself."""
        if not (self.replacements or self.patterns or self.mapping):
            return prompt
        if isinstance(prompt, str):
            return self.rewrite_text(prompt)
        if isinstance(prompt, list):
            return [{**m, "content": self.rewrite_text(m["content"])}
                    if isinstance(m, Mapping) and isinstance(m.get("content"), str) else m for m in prompt]
        return prompt

    def matched(self, text: str) -> list[bool]:
        """Whether each replacement and each pattern finds its text in ``text`` (in order)."""
        return [old in text for old, _ in self.replacements] + [
            re.search(p, text) is not None for p, _ in self.patterns] + (
            [any(old in text for old, _ in self.mapping)] if self.mapping else [])

    def as_json(self) -> dict[str, Any]:
        """The form as ``cogtestbed list EXP --json`` shows it."""
        return {"id": self.id, "kind": self.kind, "differs": self.differs,
                "verbatim": self.source == "paper", "source": self.source,
                "paper_text": self.paper_text or self.source == "paper"}


@functools.lru_cache(maxsize=16)
def _mapping_regex(mapping: tuple[tuple[str, str], ...]) -> re.Pattern[str]:
    """One alternation of a mapping's texts, longest first (a text inside a longer one loses)."""
    return re.compile("|".join(re.escape(old) for old in sorted((o for o, _ in mapping), key=len, reverse=True)))


#: Form 0 of every experiment: the prompt the environment renders, as the paper (or its code) has it.
VERBATIM = PromptForm(0, "verbatim", "nothing: the paper's prompt as published", "paper")


def paraphrase(form_id: int, differs: str, *pairs: tuple[str, str]) -> PromptForm:
    """A ``paraphrase`` form of ours replacing each verbatim sentence by our wording."""
    return PromptForm(form_id, "paraphrase", differs, "ours", tuple(pairs))


def texts_of(prompt: Any) -> str:
    """Every text of a prompt joined (a string, or chat messages' ``content`` strings)."""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list):
        return "\n".join(str(m.get("content")) for m in prompt if isinstance(m, Mapping)
                         and isinstance(m.get("content"), str))
    return ""


_NUMBER = re.compile(r"(?<![A-Za-z])\d+(?:\.\d+)?")


def numbers_in(prompt: Any) -> list[str]:
    """The numbers a prompt states, sorted (the information check compares them across forms).
    Digits right after a letter are part of a name, not a number (H2O, O3 in the collider's
    weather story)."""
    return sorted(_NUMBER.findall(texts_of(prompt)))


# ----------------------------------------------------------------------------- assignment
def resolve_forms(declared: Sequence[PromptForm], request: int | Sequence[int] | str | None) -> tuple[int, ...]:
    """The form ids a request names: ``K`` (an int or ``"K"``) is forms 0..K-1, a list (or
    ``"0,2,3"``) those ids; ``None`` is form 0 alone.  Refuses unknown ids, repeats and K out of range."""
    import numpy as np

    ids = [f.id for f in declared]
    if request is None:
        return (0,)
    if isinstance(request, str):
        parts = [p.strip() for p in request.split(",") if p.strip()]
        if not parts or not all(p.isdigit() for p in parts):
            raise FormError(f"`forms` takes a count K or a list of form ids, got {request!r}")
        request = int(parts[0]) if len(parts) == 1 else [int(p) for p in parts]
    if isinstance(request, (int, np.integer)):
        k = int(request)
        if not 1 <= k <= len(ids):
            raise FormError(f"`forms` {k}: this experiment declares {len(ids)} prompt forms (0..{len(ids) - 1})")
        return tuple(ids[:k])
    chosen = tuple(int(i) for i in request)
    unknown = [i for i in chosen if i not in ids]
    if unknown:
        raise FormError(f"unknown prompt form(s) {unknown}; this experiment declares {ids}")
    if len(set(chosen)) != len(chosen):
        raise FormError(f"prompt forms repeat: {list(chosen)}")
    if not chosen:
        raise FormError("`forms` names no form")
    return chosen


def forms_rng(seed: int) -> np.random.Generator:
    """The forms stream of a simulation or run seeded with ``seed``."""
    import numpy as np

    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(FORMS_STREAM,)))


def assign_forms(n_units: int, form_ids: Sequence[int], rng: np.random.Generator) -> np.ndarray:
    """The form of each of ``n_units`` subjects (or runs), balanced and seeded: each form is given
    ``n // K`` units and ``n % K`` forms (chosen at random) one more, in a random order."""
    import numpy as np

    ids = np.asarray(list(form_ids), dtype=np.int64)
    if ids.size == 0:
        raise FormError("no prompt form to assign")
    k = ids.size
    counts = np.full(k, n_units // k, dtype=np.int64)
    counts[rng.permutation(k)[: n_units % k]] += 1
    return rng.permutation(np.repeat(ids, counts))


def form_offsets(form_ids: Sequence[int], sds: Mapping[str, float], rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Each form's random offset of each parameter in ``sds``: ``Normal(0, sd)`` on the parameter's
    unconstrained scale, drawn in the order of ``sds`` then of ``form_ids`` (after the assignment)."""
    return {name: rng.normal(0.0, float(sd), len(form_ids)) for name, sd in sds.items()}


#: The largest form-offset SD on a parameter's unconstrained scale: 20 already spreads it over e^±40,
#: beyond every bound (``cogtestbed.api.checks.MAX_UNCONSTRAINED_SD``, which the API checks; our default).
MAX_FORM_SD = 20.0


def parse_form_sd(items: Sequence[str] | None) -> dict[str, float]:
    """``["alpha_pos=0.15", ...]`` as ``{"alpha_pos": 0.15}``; refuses a malformed or negative SD."""
    out: dict[str, float] = {}
    for item in items or ():
        name, sep, value = item.partition("=")
        try:
            sd = float(value)
        except ValueError:
            sd = float("nan")
        if not sep or not name.strip() or not 0 <= sd <= MAX_FORM_SD:  # NaN fails too
            raise FormError(f"`form_sd` takes PARAM=SD with 0 <= SD <= {MAX_FORM_SD:g} (an SD on the unconstrained "
                            f"scale), got {item!r}")
        out[name.strip()] = sd
    return out


def combined(form_id: int, differs: str, *forms: PromptForm) -> PromptForm:
    """A ``paraphrase`` form of ours applying the rewrites of ``forms`` together, in order."""
    return PromptForm(form_id, "paraphrase", differs, "ours",
                      tuple(r for f in forms for r in f.replacements), tuple(p for f in forms for p in f.patterns))


@dataclass(frozen=True)
class FormDesign:
    """Prompt forms as a factor of a simulation or run: the form ids subjects are assigned to
    (balanced, seeded: :func:`assign_forms`) and, for synthetic subjects, the SD of each named
    parameter's random form offset on its unconstrained scale (:func:`form_offsets`)."""

    ids: tuple[int, ...]
    sd: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        import numpy as np

        if not self.ids:
            raise FormError("a form design needs at least one form")
        if len(set(self.ids)) != len(self.ids):
            raise FormError(f"prompt forms repeat: {list(self.ids)}")
        bad = [k for k, v in self.sd.items() if not (np.isfinite(v) and v >= 0)]
        if bad:
            raise FormError(f"form SD of {bad} must be finite and >= 0")

    @property
    def k(self) -> int:
        return len(self.ids)

    def as_json(self) -> dict[str, Any]:
        return {"forms": list(self.ids), "form_sd": dict(self.sd)}


@dataclass(frozen=True)
class FormDraw:
    """One simulation's forms: each subject's form and each form's true offsets (by parameter)."""

    form: np.ndarray  # (n,) int64: the form id of each subject
    offsets: dict[str, np.ndarray]  # parameter -> (K,) offsets, in the order of the design's ids
    ids: tuple[int, ...]

    def subject_offsets(self, name: str) -> np.ndarray:
        """Each subject's true offset of parameter ``name`` (its form's)."""
        import numpy as np

        index = {f: i for i, f in enumerate(self.ids)}
        return self.offsets[name][np.array([index[int(f)] for f in self.form], dtype=np.int64)]


def draw_forms(design: FormDesign, n_units: int, seed: int) -> FormDraw:
    """The forms of ``n_units`` subjects seeded with ``seed``: the assignment, then the offsets,
    from the forms stream (:func:`forms_rng`)."""
    rng = forms_rng(seed)
    form = assign_forms(n_units, design.ids, rng)
    return FormDraw(form, form_offsets(design.ids, design.sd, rng), tuple(design.ids))


def standard_forms(first: PromptForm, second: PromptForm, third: PromptForm, all_three: str) -> tuple[PromptForm, ...]:
    """An experiment's eight forms: form 0 (:data:`VERBATIM`), three forms of ours (ids 1-3), all
    three together (4, described by ``all_three``) and each pair (5: 1+2, 6: 2+3, 7: 1+3)."""
    return (VERBATIM, first, second, third, combined(4, all_three, first, second, third),
            combined(5, "ours: forms 1 and 2 together", first, second),
            combined(6, "ours: forms 2 and 3 together", second, third),
            combined(7, "ours: forms 1 and 3 together", first, third))
