"""Importers for CogBench's released raw trial CSVs (``Experiments/<Task>/data/<engine>.csv``).

Each file holds one agent (``human``, ``random`` or an LLM engine); CogBench's ``run`` becomes the
trial table's ``subject`` and the file stem its ``agent``.  Some files start with a UTF-8
byte-order mark.  Importers keep CogBench's own columns next to the schema's.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pandas as pd

from cogtestbed.data.rows import (
    DataFormatError,
    drop_agreeing_duplicates,
    number_sessions,
    refuse_duplicated_columns,
)
from cogtestbed.trials import finish_table

__all__ = ["DataFormatError"]


def read_cogbench_csv(path: str | Path, required: tuple[str, ...], key: tuple[str, ...] = (),
                      may_differ: tuple[str, ...] = ()) -> pd.DataFrame:
    """Read a CogBench CSV (BOM-safe), check it has the ``required`` columns, names none twice, and
    that rows sharing ``key`` agree (:func:`~cogtestbed.data.rows.drop_agreeing_duplicates`: agreeing
    copies dropped, the count in ``attrs["duplicated_rows_dropped"]``)."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"no such file: {p}")
    refuse_duplicated_columns(p)
    try:
        df = pd.read_csv(p, encoding="utf-8-sig")
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise DataFormatError(f"{p} is not a readable CSV: {exc}") from exc
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise DataFormatError(
            f"{p.name} is not a CogBench file for this experiment: missing column(s) "
            f"{', '.join(missing)} (found {', '.join(map(str, df.columns))})"
        )
    n_dropped = 0
    if key:
        df, n_dropped = drop_agreeing_duplicates(df, key, p.name, may_differ=may_differ)
    df.attrs["duplicated_rows_dropped"] = n_dropped
    return df


def responses(df: pd.DataFrame, column: str, name: str) -> tuple[np.ndarray, np.ndarray]:
    """A column of whole-number responses as (int64 values, 0 where missing; valid mask).

    A missing response (empty cell, NaN) is an invalid trial, counted as such by the metrics; a
    value that is not a whole number is an error naming the file's line (the header is line 1).
    """
    raw = df[column]
    x = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    bad = (np.isnan(x) & raw.notna().to_numpy()) | np.isinf(x) | (np.isfinite(x) & (np.floor(x) != x))
    if bad.any():
        i = int(np.argmax(bad))
        value = raw.iloc[i]
        value = value.item() if isinstance(value, np.generic) else value
        raise DataFormatError(f"{name}: column {column!r}, line {int(df.index[i]) + 2}: value {value!r} "
                              "is not a whole number")
    valid = np.isfinite(x)
    return np.where(valid, x, 0.0).astype(np.int64), valid


def looks_like_cogbench(path: str | Path, required: tuple[str, ...], excluded: tuple[str, ...] = ()) -> bool:
    """Whether ``path`` is a CSV whose header holds ``required`` and none of ``excluded`` (cheap
    sniff; ``excluded`` tells apart tasks whose columns contain another task's).  Only the header
    row is read, with :mod:`csv` (BOM-safe, blank lines skipped, as pandas reads a header): a
    tenth of pandas' cost of opening a parser."""
    p = Path(path)
    if p.suffix.lower() != ".csv" or not p.exists():
        return False
    with p.open(newline="", encoding="utf-8-sig") as f:
        header = next((row for row in csv.reader(f) if any(cell.strip() for cell in row)), [])
    return all(c in header for c in required) and not any(c in header for c in excluded)


# ----------------------------------------------------------------------- instrumental learning
INSTRUMENTAL_COLUMNS = ("run", "trial", "task", "choice", "reward")
#: Reward probabilities of CogBench's casinos 1–4 (``palminteri2017-v0``); used to fill
#: ``mean0``/``mean1`` where a file (the human data) lacks them.
INSTRUMENTAL_PROBS = np.array([(0.25, 0.25), (0.25, 0.75), (0.75, 0.25), (0.75, 0.75)])


#: The column CogBench's instrumental ``query.py`` changes between the two copies of a trial: it
#: appends each trial twice (before and after stepping the environment) and the second copy
#: carries the *next* trial's casino.  The first copy is the one the choice was made in (its
#: ``task`` matches its ``mean0/mean1``), so it is kept; every other column must agree.
INSTRUMENTAL_MAY_DIFFER = ("task",)


def import_instrumental(path: str | Path) -> pd.DataFrame:
    """CogBench InstrumentalLearning CSV → trial table (agreeing copies of a trial dropped, see
    above; a missing ``choice`` is an invalid trial)."""
    df = read_cogbench_csv(path, INSTRUMENTAL_COLUMNS, key=("run", "trial"), may_differ=INSTRUMENTAL_MAY_DIFFER)
    n_dropped = df.attrs["duplicated_rows_dropped"]
    df = df.sort_values(["run", "trial"], kind="stable")
    runs = np.sort(df["run"].unique())
    sizes = df.groupby("run").size()
    if sizes.empty:
        raise DataFormatError(f"{Path(path).name}: no trials (a header without rows)")
    if sizes.nunique() != 1:
        raise DataFormatError(f"{Path(path).name}: runs have unequal trial counts {sorted(set(sizes))}")
    n_trials = int(sizes.iloc[0])
    shape = (len(runs), n_trials)
    casino = df["task"].to_numpy(dtype=np.int64).reshape(shape)
    if casino.min() < 1 or casino.max() > 4:
        raise DataFormatError(f"{Path(path).name}: casino ('task') outside 1-4")
    means = INSTRUMENTAL_PROBS[casino - 1]
    if "mean0" in df.columns:
        means = np.stack([df["mean0"].to_numpy().reshape(shape), df["mean1"].to_numpy().reshape(shape)], -1)
    nan = np.full(shape, np.nan)
    stimulus = {
        "casino": casino,
        "machine0": np.full(shape, None, dtype=object),
        "machine1": np.full(shape, None, dtype=object),
        "shown_first": np.full(shape, None, dtype=object),
        "mean0": means[..., 0],
        "mean1": means[..., 1],
        "reward0": df["reward0"].to_numpy().reshape(shape) if "reward0" in df.columns else nan,
        "reward1": df["reward1"].to_numpy().reshape(shape) if "reward1" in df.columns else nan,
    }
    choice, valid = responses(df, "choice", Path(path).name)
    reward = np.where(valid, df["reward"].to_numpy(dtype=np.float64), np.nan)
    table = finish_table("instrumental-learning", {**stimulus, "action": choice.reshape(shape),
                                                   "reward": reward.reshape(shape), "valid": valid.reshape(shape)},
                         agent=Path(path).stem)
    table["subject"] = np.repeat(runs, n_trials)
    table.attrs["duplicated_rows_dropped"] = n_dropped
    return table


# ----------------------------------------------------------------------- probabilistic reasoning
PROBABILISTIC_COLUMNS = ("run", "informative_lh", "prior", "lh", "left_pred", "red_observation")


#: The file columns identifying one judgement of a session (a session judges each condition once).
PROBABILISTIC_REPEAT_KEY = ("run", "informative_lh")


def import_probabilistic(path: str | Path, human: bool | None = None, sessions: str = "refuse") -> pd.DataFrame:
    """CogBench ProbabilisticReasoning CSV → trial table (one row per judgement).

    ``lh`` is P(red | left urn) in CogBench's LLM files but P(observed colour | left urn) in its
    human file (``store.py`` treats ``engine == 'human'`` differently).  ``human=None`` infers
    this from the file name, as CogBench does; the table always holds P(red | left) in ``lh``
    and marks human rows with ``cogbench_human_lh`` so that the compatibility score can
    reproduce CogBench's double flip.  CogBench's ``run`` becomes the subject.

    A session judges each condition (``informative_lh``) once and the file has no trial key, so a
    run that judges a condition again is two sessions under one id (CogBench's own claude-1.csv
    appends 215 runs twice, claude-2.csv 2): ``sessions="refuse"`` (default) refuses it in one line
    naming the file, run, condition and override; ``sessions="split"`` numbers each repeat as the
    run's next session (``session`` 1, 2, …), never merged into one
    (:func:`~cogtestbed.data.rows.number_sessions`; an identical copy is one row under
    ``refuse``).  Rows of a session are numbered in file order.
    """
    from cogtestbed.tables.probabilistic import stimulus_table

    df = read_cogbench_csv(path, PROBABILISTIC_COLUMNS)
    df, session, n_dropped = number_sessions(df, PROBABILISTIC_REPEAT_KEY, Path(path).name, sessions,
                                             columns=PROBABILISTIC_COLUMNS)
    is_human = Path(path).stem == "human" if human is None else human
    red = df["red_observation"].astype(str).str.lower().eq("true").to_numpy()[:, None]
    informative = df["informative_lh"].astype(str).str.lower().eq("true").to_numpy()[:, None]
    lh_file = df["lh"].to_numpy(np.float64)[:, None]
    lh = np.where(red, lh_file, 1.0 - lh_file) if is_human else lh_file
    estimate = df["left_pred"].to_numpy(np.float64)[:, None]
    valid = np.isfinite(estimate)
    table = stimulus_table(
        df["prior"].to_numpy(np.float64)[:, None], lh, red, informative, None, estimate, valid,
        agent=Path(path).stem, human_lh=is_human,
    )
    table["subject"] = df["run"].to_numpy(np.int64)
    table["session"] = session
    table["trial"] = df.assign(_s=session).groupby(["run", "_s"], sort=False).cumcount().to_numpy(np.int64)
    table.attrs["duplicated_rows_dropped"] = n_dropped
    return table


# ----------------------------------------------------------------------- horizon task
HORIZON_COLUMNS = ("run", "trial", "mean0", "mean1", "reward0", "reward1", "choice", "reward")
#: Columns that mark a file as another task although it has every horizon column (the
#: instrumental-learning files add the casino, ``task``).
HORIZON_EXCLUDED = ("task",)


def import_horizon(path: str | Path) -> pd.DataFrame:
    """CogBench HorizonTask CSV → trial table (one row per trial, forced trials included).

    A game (CogBench ``run``) has 5 (horizon 1) or 10 (horizon 6) rows; the first 4 are forced.
    ``unequal`` is read from the forced choices (1 or 3 choices of J).  A missing ``choice`` is an
    invalid trial.
    """
    from cogtestbed.tables.horizon import game_table

    df = read_cogbench_csv(path, HORIZON_COLUMNS, key=("run", "trial")).sort_values(["run", "trial"], kind="stable")
    name = Path(path).name
    sizes = df.groupby("run").size()
    if not sizes.isin([5, 10]).all():
        raise DataFormatError(f"{name}: games must have 5 or 10 trials, found {sorted(set(sizes))}")
    runs = sizes.index.to_numpy(np.int64)
    n, t_max = len(runs), 10
    row = np.repeat(np.arange(n), sizes.to_numpy())
    col = df["trial"].to_numpy(np.int64)
    if col.min() < 0 or col.max() >= t_max or df.duplicated(["run", "trial"]).any():
        raise DataFormatError(f"{name}: trial indices must be unique 0-9 within each game")

    def grid(column: str, fill: float = np.nan) -> np.ndarray:
        out = np.full((n, t_max), fill)
        out[row, col] = df[column].to_numpy(np.float64)
        return out

    exists = np.zeros((n, t_max), dtype=bool)
    exists[row, col] = True
    answered = np.zeros((n, t_max), dtype=bool)
    answered[row, col] = responses(df, "choice", name)[1]
    choice = np.where(answered, grid("choice", 0.0), 0.0)
    horizon = np.where(sizes.to_numpy() == 10, 6, 1)
    unequal = np.isin(choice[:, :4].sum(axis=1), (1, 3))
    means = np.column_stack([grid("mean0")[:, 0], grid("mean1")[:, 0]])
    rewards = np.stack([grid("reward0"), grid("reward1")], axis=-1)
    table = game_table(horizon, unequal, means, rewards, choice.astype(np.int64),
                       np.where(answered, grid("reward"), np.nan), answered, exists, 4, agent=Path(path).stem)
    table["subject"] = np.repeat(runs, sizes.to_numpy())
    return table


# ----------------------------------------------------------------------- restless bandit
RESTLESS_COLUMNS = ("run", "trial", "block", "block_trial", "choice", "reward", "confidence", "accurate")


def import_restless(path: str | Path) -> pd.DataFrame:
    """CogBench RestlessBandit CSV → trial table (one row per trial; choice and confidence).

    ``accurate`` is kept as stored (CogBench's rule, see :mod:`cogtestbed.environments.restless`);
    ``best_arm`` is derived from it (−1 where unknown).  Means and unchosen rewards are not in the
    files (NaN).  A missing ``choice`` is an invalid trial.
    """
    df = read_cogbench_csv(path, RESTLESS_COLUMNS, key=("run", "trial")).sort_values(["run", "trial"], kind="stable")
    choice_flat, valid_flat = responses(df, "choice", Path(path).name)
    choice, valid = choice_flat[:, None], valid_flat[:, None]
    accurate = df["accurate"].to_numpy(np.float64)[:, None]
    conf = df["confidence"].to_numpy(np.float64)[:, None]
    nan = np.full_like(conf, np.nan)
    none = np.full(conf.shape, None, dtype=object)
    stimulus = {
        "block": df["block"].to_numpy(np.int64)[:, None],
        "block_trial": df["block_trial"].to_numpy(np.int64)[:, None],
        "best_arm": np.where(valid & np.isfinite(accurate), np.where(accurate == 1, choice, 1 - choice), -1),
        "mean0": nan, "mean1": nan, "reward0": nan, "reward1": nan,
        "confidence": conf,
        "confidence_valid": np.isfinite(conf),
        "accurate": accurate,
        "raw_confidence": none,
        "confidence_parse_error": none,
    }
    reward = np.where(valid, df["reward"].to_numpy(np.float64)[:, None], np.nan)
    table = finish_table("restless-bandit", {**stimulus, "action": choice, "reward": reward, "valid": valid},
                    agent=Path(path).stem)
    table["subject"] = df["run"].to_numpy(np.int64)
    table["trial"] = df["trial"].to_numpy(np.int64)
    return table


# ----------------------------------------------------------------------- two-step task
TWOSTEP_COLUMNS = ("run", "trial", "action1", "state", "action2", "reward")


def _runs_grid(df: pd.DataFrame, name: str) -> tuple[np.ndarray, int]:
    """Run ids and the common run length (CogBench files hold equal-length runs)."""
    sizes = df.groupby("run", sort=False).size()
    if sizes.empty:
        raise DataFormatError(f"{name}: no trials (a header without rows)")
    if sizes.nunique() != 1:
        raise DataFormatError(f"{name}: runs have unequal trial counts {sorted(set(sizes))}")
    return df["run"].unique(), int(sizes.iloc[0])


def import_twostep(path: str | Path) -> pd.DataFrame:
    """CogBench TwoStepTask CSV → trial table (one row per trial, CogBench's row order).

    ``action1``/``state`` X/Y become ``action``/``planet`` 0/1 and ``action2`` the alien index on
    the planet; rows with a missing choice (7 in the human file, whose ``action2`` reads "1")
    are invalid but keep the file's reward (0), as CogBench's scoring does.  A second-stage
    alien of the other planet (present in several LLM files) makes the trial invalid; its
    first-stage choice and recorded reward are kept.
    """
    from cogtestbed.tables.twostep import ALIEN_LETTERS, EXPERIMENT, PLANETS

    df = read_cogbench_csv(path, TWOSTEP_COLUMNS, key=("run", "trial"))
    name = Path(path).name
    runs, n_trials = _runs_grid(df, name)
    df = df.set_index("run").loc[runs].reset_index()  # runs grouped, file order within each run
    shape = (len(runs), n_trials)
    code = {p: i for i, p in enumerate(PLANETS)}
    a1 = df["action1"].map(code).to_numpy(dtype=np.float64, na_value=np.nan)
    planet = df["state"].map(code).to_numpy(dtype=np.float64, na_value=np.nan)
    alien = df["action2"].astype("string")
    alien_idx = alien.map({x: i for i, x in enumerate(ALIEN_LETTERS)}).to_numpy(
        dtype=np.float64, na_value=np.nan)
    on_planet = np.isfinite(alien_idx) & np.isfinite(planet) & (alien_idx // 2 == planet)
    valid = np.isfinite(a1) & np.isfinite(planet) & on_planet
    probs = {f"p_{x}": (df[f"probs{c}"].to_numpy(np.float64) if f"probs{c}" in df else np.full(len(df), np.nan))
             for x, c in zip(ALIEN_LETTERS, "ABCD", strict=True)}
    stimulus = {
        "planet": np.where(np.isfinite(planet), planet, -1).astype(np.int64).reshape(shape),
        "common": (np.isfinite(a1) & (a1 == planet)).reshape(shape),
        "action2": np.where(on_planet, alien_idx % 2, -1).astype(np.int64).reshape(shape),
        "alien": np.asarray(alien.to_numpy(dtype=object, na_value=None), dtype=object).reshape(shape),
        **{k: v.reshape(shape) for k, v in probs.items()},
    }
    table = finish_table(EXPERIMENT, {
        **stimulus, "action": np.where(np.isfinite(a1), a1, 0).astype(np.int64).reshape(shape),
        "reward": df["reward"].to_numpy(dtype=np.float64).reshape(shape), "valid": valid.reshape(shape),
    }, agent=Path(path).stem)
    # the first-stage choice stands even when the second answer is invalid (an alien of the
    # other planet: 124 rows in claude-1, which CogBench scored with that alien's probability)
    table["action"] = pd.array(np.where(np.isfinite(a1), a1, 0).astype(np.int64), dtype="Int64")
    table.loc[~np.isfinite(a1), "action"] = pd.NA
    table.loc[~on_planet, "alien"] = None
    table["subject"] = np.repeat(runs, n_trials).astype(np.int64)
    table["raw_response_stage2"] = pd.Series([None] * len(table), dtype="string")
    table["parse_error_stage2"] = pd.Series([None] * len(table), dtype="string")
    return table


# ----------------------------------------------------------------------- temporal discounting
DISCOUNTING_COLUMNS = ("score", "present bias", "subaddictivity", "delay-speedup asymmetry-1",
                       "delay-length asymmetry-2", "run")
#: A TemporalDiscounting file has one row per run.
DISCOUNTING_KEY = ("run",)


def import_discounting(path: str | Path) -> pd.DataFrame:
    """CogBench TemporalDiscounting CSV → one ``item == "summary"`` row per run.

    CogBench stores only each run's score and anomaly flags (no answers); they are kept in
    ``summary_score`` and ``summary_<item>`` (NaN where CogBench wrote an empty row).
    """
    from cogtestbed.tables.discounting import ANOMALY_ITEMS, COGBENCH_ANOMALY_COLUMNS, EXPERIMENT, SUMMARY_ITEM

    df = read_cogbench_csv(path, DISCOUNTING_COLUMNS, key=DISCOUNTING_KEY).sort_values("run", kind="stable")
    n = len(df)
    shape = (n, 1)
    stimulus: dict[str, np.ndarray] = {
        "item": np.full(shape, SUMMARY_ITEM, dtype=object),
        "block": np.full(shape, None, dtype=object),
        "summary_score": df["score"].to_numpy(np.float64).reshape(shape),
    }
    for item, column in zip(ANOMALY_ITEMS, COGBENCH_ANOMALY_COLUMNS, strict=True):
        stimulus[f"summary_{item}"] = df[column].to_numpy(np.float64).reshape(shape)
    table = finish_table(EXPERIMENT, {
        **stimulus, "action": np.zeros(shape, dtype=np.int64), "reward": np.full(shape, np.nan),
        "valid": np.isfinite(stimulus["summary_score"]),
    }, agent=Path(path).stem)
    table["action"] = pd.array([pd.NA] * n, dtype="Int64")
    table["subject"] = df["run"].to_numpy(np.int64)
    return table


# ----------------------------------------------------------------------- BART
BART_COLUMNS = ("trial", "pumps", "reward", "run", "max_pumps", "exploded", "balloon_trial",
                "balloon_idx")


def import_bart(path: str | Path) -> pd.DataFrame:
    """CogBench BART CSV → trial table (one row per balloon; break points unknown → NaN).  A
    missing ``pumps`` voids the balloon (an invalid trial, as in the environment)."""
    from cogtestbed.tables.bart import ALPHABET, EXPERIMENT

    df = read_cogbench_csv(path, BART_COLUMNS, key=("run", "trial")).sort_values(["run", "trial"], kind="stable")
    runs, n_balloons = _runs_grid(df, Path(path).name)
    shape = (len(runs), n_balloons)
    exploded = df["exploded"].astype(str).str.lower().eq("true").to_numpy()
    idx = df["balloon_idx"].to_numpy(np.int64)
    pumps, valid = responses(df, "pumps", Path(path).name)
    stimulus = {
        "balloon": np.array(list(ALPHABET), dtype=object)[idx].reshape(shape),
        "balloon_idx": idx.reshape(shape),
        "max_pumps": df["max_pumps"].to_numpy(np.int64).reshape(shape),
        "balloon_trial": df["balloon_trial"].to_numpy(np.int64).reshape(shape),
        "break_point": np.full(shape, np.nan),
        "pumps": pumps.reshape(shape),
        "exploded": (exploded & valid).reshape(shape),
        "n_decisions": np.full(shape, -1, dtype=np.int64),
    }
    reward = np.where(valid, df["reward"].to_numpy(np.float64), np.nan)
    table = finish_table(EXPERIMENT, {**stimulus, "action": pumps.reshape(shape), "reward": reward.reshape(shape),
                                      "valid": valid.reshape(shape)}, agent=Path(path).stem)
    table["subject"] = np.repeat(runs, n_balloons).astype(np.int64)
    return table
