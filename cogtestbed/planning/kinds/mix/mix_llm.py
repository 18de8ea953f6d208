"""An LLM as a mix plan's predictor (``plan --mix --predictor llm --llm SPEC``): it continues each person's
short session.

For each person of the Psych-201 file (``--human``), the LLM reads the person's own transcript up to the end
of their short session (the first ``--short-share`` of their choices: what the ``model`` predictor sees),
then, for each of the next ``--llm-trials`` trials of that person's session (all the rest by default), that
trial's own text after the short session.  No later trial is shown with the person's answer, so an
unlabelled unit (a short session only) is predicted the same way.  The LLM's choice is the stated option it
gives the higher log-probability (exact scoring, :meth:`~cogtestbed.llm_adapters.clients.base.LLMClient.score`
of the text with each option; one request per option on a served model).  The person's predicted estimand is
the estimand (:func:`cogtestbed.planning.kinds.mix.mix.person_values`) of their short session followed by the
LLM's choices.  The trials must not depend on earlier choices (risky choice: each trial is a fixed pair of
lotteries); the transcript's choices must be the table's, option for option, or the predictor is refused.

Calls are counted before any is made and refused over ``--llm-max-calls``; they are priced from the price table
(``--prices``) at the prompt tokens of each request as the client counts them (exact where it knows the model's
tokenizer, else its documented estimate: the plan says which), and refused over ``--max-cost``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.errors import InputError


@dataclass(frozen=True)
class TwinTrial:
    """One trial the LLM answers for a person: the table row it stands for, its prompt, the stated options."""

    subject: Any
    row: Any
    prompt: str
    options: tuple[str, ...]


def _records(path: str | Path) -> list[pd.DataFrame]:
    """The transcript's marked choices, one frame per record in file order."""
    from cogtestbed.data.psych201_table import transcript_table

    choices = transcript_table(path)
    choices = choices[choices["choice"] >= 0].sort_values(["line", "choice"], kind="stable")
    return [rows for _, rows in choices.groupby("line", sort=True)]


def _person(subject: Any, rows: pd.DataFrame, record: pd.DataFrame, short_share: float,
            trials: int | None) -> list[TwinTrial]:
    """A person's twin trials, once the record is checked to be the person's table rows choice for choice."""
    if len(record) != len(rows):
        raise InputError(f"subject {subject}: the transcript marks {len(record)} choices, the table has {len(rows)} "
                         "trials: the LLM predictor needs one marked choice a trial")
    options = [tuple(o) if o is not None else () for o in record["options"]]
    chosen = record["chosen"].astype(str).tolist()
    actions = rows["action"].to_numpy()
    if any(c not in o or o.index(c) != a for c, o, a in zip(chosen, options, actions, strict=True)):
        raise InputError(f"subject {subject}: the transcript's choices are not the table's actions option for option "
                         "(stated options in order): the LLM predictor cannot map its answers to this experiment")
    k = max(1, int(np.floor(short_share * len(rows))))
    before = record["before"].astype(str).tolist()
    short = "".join(f"{b}<<{c}>>" for b, c in zip(before[:k], chosen[:k], strict=True))
    stop = len(rows) if trials is None else min(len(rows), k + trials)
    return [TwinTrial(subject, rows.index[j], f"{short}{before[j]}<<", options[j]) for j in range(k, stop)]


def twin_trials(path: str | Path, table: pd.DataFrame, short_share: float,
                trials: int | None = None) -> list[TwinTrial]:
    """The trials the LLM answers (module docstring): the table's subjects in order, paired with the file's
    records in order, each checked to be the same person choice for choice."""
    ordered = table.sort_values(["subject", "session", "trial"], kind="stable")
    people = [(s, rows) for s, rows in ordered.groupby("subject", sort=True)]
    records = _records(path)
    if len(records) != len(people):
        raise InputError(f"{Path(path).name} holds {len(records)} records, the table {len(people)} subjects: the LLM "
                         "predictor pairs them one to one")
    out: list[TwinTrial] = []
    for (subject, rows), record in zip(people, records, strict=True):
        out.extend(_person(subject, rows, record, short_share, trials))
    return out


def price_calls(client: Any, twins: list[TwinTrial], price: Any) -> dict[str, Any]:
    """Calls, prompt tokens (whether counted exactly) and dollars the twins take, before any call."""
    calls = tokens = 0
    exact = True
    for t in twins:
        for option in t.options:
            n, ok = client.billed_prompt_tokens(t.prompt + option)
            tokens, exact = tokens + n, exact and ok
        calls += client.score_requests(len(t.options))
    dollars = None if price is None else float(price.cost(tokens, 0))
    return {"spec": client.spec, "calls": calls, "prompt_tokens": tokens, "exact_tokens": exact, "dollars": dollars}


def check_budget(cost: dict[str, Any], max_calls: int | None, max_cost: float | None) -> None:
    """Refuse, before any call, twins over ``max_calls`` or ``max_cost`` in one line."""
    if max_calls is not None and cost["calls"] > max_calls:
        raise InputError(f"the LLM predictor needs {cost['calls']:,} calls, over `llm_max_calls` {max_calls:,}: raise "
                         "it or predict fewer trials (`llm_trials`)")
    if max_cost is not None and cost["dollars"] is not None and cost["dollars"] > max_cost:
        raise InputError(f"the LLM predictor costs ${cost['dollars']:,.2f}, over `max_cost` ${max_cost:,.2f}")


def answered_table(client: Any, twins: list[TwinTrial], table: pd.DataFrame, short: pd.DataFrame) -> pd.DataFrame:
    """Each person's short session (``short``, rows of ``table``) followed by the LLM's choices on the twin trials."""
    actions = [int(np.argmax(client.score(t.prompt, list(t.options), raw=True).logprobs)) for t in twins]
    answered = table.loc[[t.row for t in twins]].copy()
    answered["action"] = np.asarray(actions).astype(table["action"].dtype)
    return pd.concat([short, answered]).sort_values(["subject", "session", "trial"], kind="stable")


def llm_predictions(table: pd.DataFrame, path: str | Path, short: pd.DataFrame, *, client: Any, price: Any,
                    short_share: float, trials: int | None = None, max_calls: int | None = None,
                    max_cost: float | None = None) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Each person's short session (``short``) followed by the LLM's choices (:func:`answered_table`; the
    caller computes the estimand on it) and what its calls took (:func:`price_calls`, counted, bounded and
    priced before any call is made)."""
    twins = twin_trials(path, table, short_share, trials)
    cost = price_calls(client, twins, price)
    check_budget(cost, max_calls, max_cost)
    answered = answered_table(client, twins, table, short)
    people = max(1, table["subject"].nunique())
    cost["per_unit"] = None if cost["dollars"] is None else cost["dollars"] / people
    return answered, cost


__all__ = ["TwinTrial", "answered_table", "check_budget", "llm_predictions", "price_calls", "twin_trials"]
