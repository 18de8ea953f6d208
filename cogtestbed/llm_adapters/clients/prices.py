"""Model prices: the price table (``prices.toml``, beside ``capabilities.toml``, plus the user's files).

Each entry is US dollars per million input and output tokens of a ``BACKEND:MODEL`` glob pattern, and
optionally the share a provider's batch API takes off (:class:`Price`); :class:`PriceTable` reads
and checks the packaged table, ``COGTESTBED_PRICES`` and ``--prices`` files; :func:`require_price` is
the one rule for a model without a price.
"""

from __future__ import annotations

import fnmatch
import math
import os
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from cogtestbed.errors import BudgetError

#: Where the packaged table lies (named in a refusal; read with :mod:`importlib.resources`).
PACKAGED_TABLE = "cogtestbed/llm_adapters/clients/prices.toml"


class PriceError(BudgetError, ValueError):
    """A price table entry that is not a price (negative, NaN, infinite, non-numeric, unknown field)."""


class UnpricedModel(BudgetError, ValueError):
    """The model has no entry in the price table and the caller did not allow pricing in calls only."""


#: Fields of a price table entry (USD per million tokens; ``batch_discount`` a fraction).
PRICE_FIELDS = ("input", "output", "batch_discount")


def _price_number(value: object, what: str) -> float:
    """``value`` as a finite number >= 0, else :class:`PriceError` naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PriceError(f"{what} must be a number (USD per million tokens), got {value!r}")
    number = float(value)
    if not math.isfinite(number) or number < 0:
        raise PriceError(f"{what} must be a finite number >= 0, got {value!r}")
    return number


@dataclass(frozen=True)
class Price:
    """US dollars per million input and output tokens.

    ``batch_discount``: the share of the price a provider's batch API takes off (OpenAI's Batch API
    and Anthropic's Message Batches: 0.5, "50% off"), ``None`` where the table gives none (no batch
    price is known).  :meth:`batch` is the price of a call made in batch mode.
    """

    input: float
    output: float
    batch_discount: float | None = None

    def __post_init__(self) -> None:
        _price_number(self.input, "input")
        _price_number(self.output, "output")
        if self.batch_discount is not None:
            d = _price_number(self.batch_discount, "batch_discount")
            if d >= 1:
                raise PriceError(f"batch_discount is the share taken off, in [0, 1), got {d:g}")

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.input + completion_tokens * self.output) / 1e6

    def batch(self) -> Price | None:
        """The price in batch mode (``None`` where no ``batch_discount`` is known)."""
        if self.batch_discount is None:
            return None
        keep = 1.0 - self.batch_discount
        return Price(self.input * keep, self.output * keep, None)


class PriceTable:
    """``BACKEND:MODEL`` glob patterns → :class:`Price`; the longest matching pattern wins.

    The packaged ``prices.toml`` is read first, then ``COGTESTBED_PRICES`` and ``extra`` files: a
    pattern of a later file that matches the model wins over every match of an earlier one (a user's
    ``["openai:gpt-4o-mini"]`` overrides the packaged ``["openai:gpt-4o-mini*"]``), and within one
    file the longest matching pattern wins.  Every entry is checked when read: ``input`` and
    ``output`` are finite numbers >= 0 (a string, NaN or a negative price is refused with the
    file and entry named), ``batch_discount`` (optional) is in [0, 1), and no other field is
    allowed (a misspelt field would otherwise price nothing).
    """

    def __init__(self, extra: Path | None = None) -> None:
        self.entries: dict[str, Price] = {}
        #: The file (0: the packaged table) each pattern was last read from.
        self.layer: dict[str, int] = {}
        self.sources: list[str] = [PACKAGED_TABLE]
        self._load(resources.files(__package__).joinpath("prices.toml").read_text())
        for path in (os.environ.get("COGTESTBED_PRICES"), extra):
            if path:
                p = Path(path)
                if not p.is_file():
                    raise FileNotFoundError(f"no price table at {p}")
                self._load(p.read_text(), str(p), len(self.sources))
                self.sources.append(str(p))

    def _load(self, text: str, where: str = "prices.toml", layer: int = 0) -> None:
        try:
            table = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise PriceError(f"{where}: not a TOML price table ({exc})") from None
        for pattern, entry in table.items():
            if not isinstance(entry, dict):
                raise PriceError(f"{where}: {pattern!r} must be a table [\"BACKEND:MODEL\"] with input and output")
            unknown = sorted(set(entry) - set(PRICE_FIELDS))
            missing = [k for k in ("input", "output") if k not in entry]
            if unknown or missing:
                raise PriceError(f"{where}: [{pattern!r}] " + (f"has unknown field(s) {', '.join(unknown)}"
                                 if unknown else f"needs {' and '.join(missing)}")
                                 + f" (fields: {', '.join(PRICE_FIELDS)}; USD per million tokens)")
            try:
                self.entries[pattern] = Price(entry["input"], entry["output"], entry.get("batch_discount"))
                self.layer[pattern] = layer
            except PriceError as exc:
                raise PriceError(f"{where}: [{pattern!r}] {exc}") from None

    def lookup(self, spec: str) -> Price | None:
        matches = [p for p in self.entries if fnmatch.fnmatchcase(spec, p)]
        return self.entries[max(matches, key=lambda p: (self.layer[p], len(p)))] if matches else None


def require_price(table: PriceTable, spec: str, allow_unpriced: bool = False) -> Price | None:
    """The price of ``spec``, or the one rule for a model without one (``plan`` and ``run --dry-run``):
    refused with :class:`UnpricedModel` (one line naming ``--prices``), unless ``allow_unpriced``
    — then ``None``, and the caller plans in calls only and says so."""
    price = table.lookup(spec)
    if price is None and not allow_unpriced:
        raise UnpricedModel(
            f"no price for {spec} in the price table ({', '.join(table.sources)}): give one with `prices` FILE "
            f"(TOML: [\"{spec}\"] input = USD, output = USD per million tokens) or pass `allow_unpriced` to "
            "count calls and tokens only")
    return price


#: What a plan or dry run without a price says it did.
UNPRICED_NOTE = "no price for this model (--allow-unpriced): calls and tokens only, no dollars"
