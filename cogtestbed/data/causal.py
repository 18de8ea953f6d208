"""Importers for the collider experiment: Rehder & Waldmann's (2017) human CSV and causAIign's
LLM response CSVs, into the trial table of :mod:`cogtestbed.environments.causal`.

* ``rw17_collider_ce.csv`` (``;``-separated, decimal commas, UTF-8 BOM): 48 subjects × 20
  judgments.  ``s`` → ``subject``, ``trial`` → ``trial`` (presentation order), ``attr.polarity`` →
  ``cntbl_cond``, ``letter.type`` (A–K) → ``letter``, ``domain`` (``society`` → ``sociology``),
  ``study.type`` (e.g. ``X|Y=1,Z=1``) → ``item`` (which of the 20 items), ``y`` → ``action``
  (0–100); ``diagram`` and ``rt`` are kept.
  ``agent`` is ``human``; ``prompt_type`` is ``human``.
* ``<experiment>__<model>.csv`` (``;``-separated): one LLM's answers.  ``id`` → the item via
  causAIign's id layout, ``domain`` → the domain variant (this decides the content condition:
  RW17, abstract or overloaded), ``prompt_category`` → ``prompt_type``.  Every ``response`` is
  parsed with the environment's parser (:func:`~cogtestbed.environments.causal.parse_answer`), so
  an answer such as a reasoning text or an API error is an invalid row with its reason, never a
  silently truncated number.  One subject per (model, temperature, replicate) where a prompt id
  repeats.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cogtestbed.data.rows import DataFormatError, drop_agreeing_duplicates, refuse_duplicated_columns
from cogtestbed.environments.causal import (
    CB_ID_OFFSET,
    EXPERIMENT,
    ITEMS,
    CausalDesign,
    domain_label,
    parse_answer,
    stimulus_columns,
)
from cogtestbed.trials import finish_table

HUMAN_COLUMNS = ("s", "domain", "attr.polarity", "letter.type", "study.type", "trial", "y")
#: A row of the human file is one subject's (``s``) judgment number ``trial``.
HUMAN_KEY = ("s", "trial")
#: The human file calls the sociology cover story "society".
HUMAN_DOMAIN_NAMES = {"society": "sociology"}
RESPONSE_COLUMNS = ("id", "response", "domain", "task", "cntbl_cond", "subject")


def _read_semicolon(path: str | Path) -> pd.DataFrame:
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"no such file: {p}")
    refuse_duplicated_columns(p, ";")
    try:
        return pd.read_csv(p, sep=";", encoding="utf-8-sig", decimal=",", dtype={"response": str})
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise DataFormatError(f"{p} is not a readable ';'-separated CSV: {exc}") from exc


def _header(path: str | Path) -> list[str]:
    p = Path(path)
    if p.suffix.lower() != ".csv" or not p.exists():
        return []
    return list(pd.read_csv(p, sep=";", encoding="utf-8-sig", nrows=0).columns)


def looks_like_rw17_human(path: str | Path) -> bool:
    return all(c in _header(path) for c in HUMAN_COLUMNS)


def looks_like_causaign_responses(path: str | Path) -> bool:
    return all(c in _header(path) for c in RESPONSE_COLUMNS)


def _item_index(study_type: str) -> int:
    """``X|Y=1,Z=1`` → index of the item with that query and those observations."""
    query, _, cond = study_type.partition("|")
    observed = frozenset((v, int(s)) for v, _, s in (c.partition("=") for c in cond.split(",")))
    for i, it in enumerate(ITEMS):
        if it.query == query and frozenset(it.observed) == observed:
            return i
    raise DataFormatError(f"unknown study.type {study_type!r}")


def import_rw17_human(path: str | Path) -> pd.DataFrame:
    """RW17 Exp. 1 human CSV → trial table (one row per judgment, 48 × 20)."""
    df = _read_semicolon(path)
    missing = [c for c in HUMAN_COLUMNS if c not in df.columns]
    if missing:
        raise DataFormatError(f"{Path(path).name} is not the RW17 human CSV: missing {', '.join(missing)}")
    df, _ = drop_agreeing_duplicates(df, HUMAN_KEY, Path(path).name)
    df = df.sort_values(["s", "trial"], kind="stable").reset_index(drop=True)
    df["domain"] = df["domain"].replace(HUMAN_DOMAIN_NAMES)
    sizes = df.groupby("s").size()
    if sizes.nunique() != 1:
        raise DataFormatError(f"{Path(path).name}: subjects have unequal judgment counts")
    n_sub, n_t = len(sizes), int(sizes.iloc[0])
    design = CausalDesign.human()
    doms = list(design.domain_list)
    bad = set(df["domain"]) - set(doms)
    if bad:
        raise DataFormatError(f"{Path(path).name}: unknown domain(s) {sorted(bad)}")
    variant = df["domain"].map(doms.index).to_numpy(np.int64).reshape(n_sub, n_t)
    cb = df["attr.polarity"].map(list(design.cntbl_conds).index).to_numpy(np.int64).reshape(n_sub, n_t)
    item = np.array([_item_index(s) for s in df["study.type"]], dtype=np.int64).reshape(n_sub, n_t)
    letters = np.array([ITEMS[i].letter for i in item.ravel()])
    if not np.array_equal(letters, df["letter.type"].str.lower().to_numpy()):
        raise DataFormatError(f"{Path(path).name}: letter.type disagrees with study.type")
    stim = stimulus_columns(design, variant, cb, item)
    stim["prompt_type"] = pd.Categorical(["human"] * item.size)
    y = df["y"].to_numpy(np.float64).reshape(n_sub, n_t)
    table = finish_table(EXPERIMENT, {**stim, "action": y, "reward": np.full(y.shape, np.nan),
                                      "valid": np.ones(y.shape, bool)}, agent="human")
    table.insert(table.columns.get_loc("reward"), "confidence", np.nan)
    table["subject"] = df["s"].to_numpy(np.int64)
    table["trial"] = df["trial"].to_numpy(np.int64)
    table["diagram"] = pd.array(df["diagram"].astype(str), dtype="string")
    table["rt"] = df["rt"].astype(float).to_numpy() if "rt" in df.columns else np.nan
    return table


def design_for_labels(labels: set[str], prompt_type: Any) -> CausalDesign:
    """The design whose domain variants carry causAIign's ``labels``."""
    candidates = [CausalDesign.rw17(prompt_type=prompt_type),
                  CausalDesign.abstract(prompt_type=prompt_type),
                  CausalDesign.rw17_overloaded(prompt_type=prompt_type),
                  CausalDesign.abstract_overloaded(prompt_type=prompt_type)]
    for ov in ("d", "de"):
        candidates.append(CausalDesign(content="rw17", overload=ov, prompt_type=prompt_type))
    candidates.append(CausalDesign(content="rw17", overload="e", fillers=("lorem",), prompt_type=prompt_type))
    candidates.append(CausalDesign(content="rw17", overload="e", fillers=("crossdomain",), prompt_type=prompt_type))
    for d in candidates:
        names = {domain_label(d, a, f) for a, f in d.variants}
        if labels <= names:
            return d
    raise DataFormatError(f"unknown causAIign domain(s): {sorted(labels)}")


def prompt_type_of(category: str) -> str:
    c = str(category).lower()
    if "cot" in c:
        return "cot"
    if "conf" in c:
        return "numeric_conf"
    return "numeric"


def _response_cells(df: pd.DataFrame, design: CausalDesign, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each response row's (domain variant, counterbalance condition, item) from its prompt id and
    labels; refuse rows whose labels or ids do not fit causAIign's layout."""
    known = df["domain"].notna()
    labels = [domain_label(design, a, f) for a, f in design.variants]
    ids = df["id"].to_numpy(np.int64)
    # rows of failed API calls carry no domain/task: the prompt id alone locates them
    variant = np.where(known, df["domain"].astype(str).map(
        lambda x: labels.index(x) if x in labels else -1).to_numpy(), (ids - 1) // 160)
    cb_names = list(design.cntbl_conds)
    offs = np.array([CB_ID_OFFSET[c] for c in cb_names])
    cb = df["cntbl_cond"].map(lambda c: cb_names.index(c) if c in cb_names else -1).to_numpy(np.int64)
    if np.any(cb < 0) or np.any(variant < 0):
        raise DataFormatError(f"{name}: rows without a known domain or cntbl_cond")
    item = (ids - 1) - 160 * variant - offs[cb]
    if np.any((item < 0) | (item >= len(ITEMS))):
        raise DataFormatError(f"{name}: prompt ids do not follow causAIign's layout")
    letters = np.array([ITEMS[i].letter for i in item])
    has_task = df["task"].notna().to_numpy()
    if not np.array_equal(letters[has_task], df["task"][has_task].astype(str).str.lower().to_numpy()):
        raise DataFormatError(f"{name}: task letters disagree with the prompt ids")
    return variant, cb, item


def _response_subject_table(df: pd.DataFrame, rows: np.ndarray, k: int, design: CausalDesign, ptype: str,
                            cells: tuple[np.ndarray, np.ndarray, np.ndarray]) -> pd.DataFrame:
    """The trial table of one subject (model × temperature × replicate): rows ``rows`` of ``df``."""
    variant, cb, item = cells
    raw = df["response"].to_numpy(object)[rows]
    parsed = [parse_answer(str(r) if r is not None and r == r else "", ptype) for r in raw]
    valid = np.array([p.ok for p in parsed])
    answers = [p.action if p.ok else None for p in parsed]
    rating = np.array([a.rating if a is not None else np.nan for a in answers], dtype=np.float64)
    conf = np.array([a.confidence if a is not None and a.confidence is not None else np.nan
                     for a in answers], dtype=np.float64)
    err = np.array([p.error for p in parsed], dtype=object)
    stim = stimulus_columns(design, variant[rows][None], cb[rows][None], item[rows][None])
    t = finish_table(EXPERIMENT, {**stim, "action": rating[None], "reward": np.full((1, len(rows)), np.nan),
                                  "valid": valid[None], "raw_response": raw[None].astype(object),
                                  "parse_error": err[None]},
                     agent=str(df["subject"].iloc[rows[0]]), subject_offset=k)
    t.insert(t.columns.get_loc("reward"), "confidence", conf)
    t["temperature"] = df["temperature"].to_numpy()[rows] if "temperature" in df.columns else np.nan
    return t


def import_causaign_responses(path: str | Path) -> pd.DataFrame:
    """causAIign LLM response CSV → trial table (see module docstring)."""
    df = _read_semicolon(path)
    missing = [c for c in RESPONSE_COLUMNS if c not in df.columns]
    if missing:
        raise DataFormatError(f"{Path(path).name} is not a causAIign response CSV: missing {', '.join(missing)}")
    category = df["prompt_category"].iloc[0] if "prompt_category" in df.columns else "numeric"
    ptype = prompt_type_of(category)
    known = df["domain"].notna()
    design = design_for_labels(set(df.loc[known, "domain"].astype(str)), ptype)
    variant, cb, item = _response_cells(df, design, Path(path).name)
    temp = df["temperature"].astype(str) if "temperature" in df.columns else pd.Series("", index=df.index)
    group = df["subject"].astype(str) + "|" + temp
    replicate = df.assign(_g=group).groupby(["_g", "id"]).cumcount()
    subj_key = group + "|" + replicate.astype(str)
    parts = [_response_subject_table(df, np.asarray(idx), k, design, ptype, (variant, cb, item))
             for k, (_key, idx) in enumerate(subj_key.groupby(subj_key, sort=False).groups.items())]
    table = pd.concat(parts, ignore_index=True)
    table["agent"] = table["agent"].astype("category")
    table["experiment"] = table["experiment"].astype("category")
    return table
