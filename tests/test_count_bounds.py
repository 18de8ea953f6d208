"""Every count option has an upper bound declared with the option, and a count over it is refused when the
request is built: one line naming what it would take and the bound, exit 2, before any simulation or heavy
import (before, ``--monitor-sims 10000000`` searched for 100 s and allocated 6.7 GiB first)."""

from __future__ import annotations

import json
import typing
from typing import Any

import pytest
from cold_cli import HEAVY, cold

import cogtestbed as ct
import cogtestbed.cli  # noqa: F401 - builds every command, and so lists every request's options
from cogtestbed.bounds import Cost, check_bound
from cogtestbed.planning.plan_options import PlanSequential
from cogtestbed.request import Leaf, declared_requests, leaves

MINI = "openai:gpt-4o-mini"
RW_CLI = ["--model", "rw-pm", "--llm", MINI, "--effect", "optimism_bias=0.2"]
#: Integer options that count nothing: any integer is a seed.
NOT_COUNTS = {"seed", "fault_seed"}


def _integer_options() -> list[tuple[str, Leaf]]:
    found = []
    for cls in declared_requests():
        for leaf in leaves(cls):
            parsed = leaf.opt.cli_type if leaf.opt.cli_type is not None else leaf.hint
            if leaf.opt.cli and int in (typing.get_args(parsed) or (parsed,)):
                found.append((cls.__name__, leaf))
    return found


def test_every_integer_option_of_the_command_line_has_an_upper_bound() -> None:
    found = _integer_options()
    names = {leaf.name for _, leaf in found}
    assert {"monitor_sims", "seq_sims", "null_sims", "adaptive_sims", "fit_sims", "reask", "subjects", "reps",
            "sims", "draws", "chains", "workers", "concurrency"} <= names
    unbounded = sorted(f"{cls}.{leaf.name}" for cls, leaf in found
                       if leaf.name not in NOT_COUNTS and leaf.opt.max is None)
    assert unbounded == []


def test_a_count_of_work_says_what_it_would_take() -> None:
    costed = {leaf.name for _, leaf in _integer_options() if leaf.opt.cost is not None}
    assert {"monitor_sims", "seq_sims", "null_sims", "adaptive_sims", "fit_sims", "reask", "reps", "sims",
            "draws", "workers"} <= costed


#: Commands whose counts are far over their bounds, all refused in one fresh process.
OVER = [
    (["plan", "instrumental-learning", *RW_CLI, "--monitor", "--monitor-sims", "10000000"],
     "--monitor-sims 10,000,000 is over its bound of 50,000: 10,000,000 simulated studies per hypothesis would take "
     "about 180 GB of memory and 45 minutes of CPU"),
    (["plan", "instrumental-learning", *RW_CLI, "--looks", "3", "--seq-sims", "10000000"],
     "--seq-sims 10,000,000 is over its bound of 50,000: 10,000,000 simulated sequential studies would take about "
     "9.3 days of CPU"),
    (["plan", "instrumental-learning", *RW_CLI, "--looks", "3", "--null-sims", "10000000"],
     "--null-sims 10,000,000 is over its bound of 50,000"),
    (["plan", "instrumental-learning", *RW_CLI, "--fit", "hierarchical", "--fit-sims", "100000"],
     "--fit-sims 100,000 is over its bound of 1,000"),
    (["plan", "temporal-discounting", "--adaptive", "k", "--precision", "k=0.1", "--llm", MINI, "--adaptive-sims",
      "10000000"], "--adaptive-sims 10,000,000 is over its bound of 10,000"),
    (["run", "instrumental-learning", "--llm", MINI, "--dry-run", "--reask", "10000000", "-o", "unwritten"],
     "--reask 10,000,000 is over its bound of 100: 10,000,000 re-asks per unparseable answer (each another paid "
     "call of the whole prompt); give at most 100"),
    (["simulate", "instrumental-learning", "-a", "rw-pm", "--subjects", "10000000000", "-o", "unwritten"],
     "--subjects 10,000,000,000 is over its bound of 1,000,000,000"),
    (["run", "instrumental-learning", "--llm", MINI, "--dry-run", "--subjects", "100000000", "-o", "unwritten"],
     "--subjects 100,000,000 is over its bound of 100,000"),
    (["recover", "--model", "rw-pm", "--reps", "10000000"], "--reps 10,000,000 is over its bound of 100,000"),
    (["recover", "--model", "rw-pm", "--method", "hierarchical", "--draws", "10000000"],
     "--draws 10,000,000 is over its bound of 100,000: 10,000,000 posterior draws per chain would take about "
     "64 GB of memory"),
    (["power", "rw-pm", "--effect", "optimism_bias=0.2", "--sims", "10000000"],
     "--sims 10,000,000 is over its bound of 100,000"),
    (["run", "instrumental-learning", "--llm", MINI, "--dry-run", "--concurrency", "100000", "-o", "unwritten"],
     "--concurrency 100,000 is over its bound of 1,024"),
]

_PROBE = """
import io, json, sys, contextlib
from cogtestbed.cli import run_cli
codes, errs = [], []
for argv in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        codes.append(run_cli(argv))
    errs.append(err.getvalue())
heavy = sorted(m for m in json.loads(sys.argv[2]) if m in sys.modules)
print(json.dumps({"codes": codes, "errs": errs, "heavy": heavy}))
"""


def test_counts_over_their_bounds_are_refused_in_one_line_before_anything_heavy(tmp_path: Any) -> None:
    requests = [[str(tmp_path / a) if a == "unwritten" else a for a in argv] for argv, _ in OVER]
    done = cold(_PROBE, json.dumps(requests), json.dumps(HEAVY))
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.splitlines()[-1])
    assert out["codes"] == [2] * len(OVER), out["errs"]
    for err, (_, expected) in zip(out["errs"], OVER, strict=True):
        assert len(err.strip().splitlines()) == 1, err
        assert err.startswith(f"error: {expected}"), err
        assert "give at most" in err
    assert out["heavy"] == []
    assert not any(p.exists() for p in tmp_path.iterdir())


def test_the_python_api_refuses_the_same_counts(no_simulation: None) -> None:
    with pytest.raises(ct.InputError, match=r"^`monitor_sims` 10,000,000 is over its bound of 50,000: "):
        ct.plan("instrumental-learning", model="rw-pm", llm=MINI, effect={"optimism_bias": 0.2}, monitor=True,
                monitor_sims=10_000_000)
    with pytest.raises(ct.InputError, match=r"^`monitor_sims` 10,000,000 is over its bound"):  # in a sub-object too
        ct.plan("instrumental-learning", model="rw-pm", llm=MINI, effect={"optimism_bias": 0.2},
                sequential=PlanSequential(monitor=True, monitor_sims=10_000_000))


def test_a_count_at_its_bound_passes_and_one_over_is_refused() -> None:
    cost = Cost("studies", bytes=2e3, cpu_seconds=0.4, at="at the default design")
    check_bound("sims", 100, 100, cost)
    check_bound("sims", None, 100, cost)
    with pytest.raises(ct.InputError) as refused:
        check_bound("sims", 101, 100, cost)
    assert str(refused.value) == ("`sims` 101 is over its bound of 100: 101 studies would take about 202 kB of memory "
                                  "and 40 seconds of CPU at the default design; give at most 100")


@pytest.mark.parametrize(("argv", "line"), [
    (["run", "instrumental-learning", "--llm", MINI, "--dry-run", "--temperature", "nan", "-o", "o"],
     "error: Invalid value for '--temperature': nan is not a finite number (see cogtestbed run --help)"),
    (["plan", "instrumental-learning", "--max-cost", "nan"],
     "error: Invalid value for '--max-cost': nan is not a finite number (see cogtestbed plan --help)"),
    (["plan", "instrumental-learning", "--max-cost", "-1"],
     "error: Invalid value for '--max-cost': must be at least 0, got -1 (see cogtestbed plan --help)"),
    (["plan", "instrumental-learning", "--assurance", "2"],
     "error: Invalid value for '--assurance': must be at most 1, got 2 (see cogtestbed plan --help)"),
    (["plan", "instrumental-learning", "--monitor-sims", "2.5"],
     "error: Invalid value for '--monitor-sims': '2.5' is not an integer (see cogtestbed plan --help)"),
])
def test_a_bad_number_on_the_command_line_is_one_plain_line(argv: list[str], line: str,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    from cogtestbed.cli import run_cli

    assert run_cli(argv) == 2
    assert capsys.readouterr().err.strip().splitlines() == [line]


def test_a_dry_run_counts_re_asks_without_building_each(monkeypatch: pytest.MonkeyPatch, tmp_path: Any,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """``run --dry-run --reask N`` computes its worst case arithmetically: the requests it builds do not grow with
    N (before, each re-ask of every step was built and tokenised: ``--reask 10000000`` reached 10 GB)."""
    from cogtestbed.cli import run_cli
    from cogtestbed.llm_adapters.runs.agent import LLMAgent

    built: list[int] = []
    real = LLMAgent.request

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        built.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(LLMAgent, "request", counted)
    seen = {}
    for reask in (1, 100):
        built.clear()
        assert run_cli(["run", "instrumental-learning", "--llm", MINI, "--subjects", "1", "--dry-run", "--reask",
                        str(reask), "--max-calls", "100000", "-o", str(tmp_path / str(reask))]) == 0
        seen[reask] = (len(built), json.loads(capsys.readouterr().out.splitlines()[0]))
    assert seen[1][0] == seen[100][0]
    report = seen[100][1]
    assert report["calls_if_every_answer_is_invalid"] == report["calls_ceiling"] == 101 * report["calls"]
    assert report["worst_case_per_subject"]["calls"] == 101 * report["calls"]
