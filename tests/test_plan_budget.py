"""``plan --max-seconds S``: a search that may run past S is refused before it starts, in one line naming what it
may take and the largest range of the searched size that fits (the per-study time injected: no timing asserted)."""

from __future__ import annotations

import pytest

import cogtestbed as ct
from cogtestbed.cli import run_cli
from cogtestbed.planning import estimate
from cogtestbed.planning.budget import check_time, largest_fitting, search_studies, search_time

MINI = "openai:gpt-4o-mini"


def test_the_studies_a_search_needs_follow_its_ladder_and_the_final_mc_se() -> None:
    # ladder 10, 20 below the top 40; three looks at the top (one, then two refinements); the chosen design
    # to MC SE .03 at power .8 (178 studies) twice: confirmed, then fresh studies for bias and coverage
    assert search_studies(10, 40, 0.8, 0.03) == [(10, 48), (20, 48), (40, 48), (40, 48), (40, 48), (40, 356)]
    # a coarse MC SE still simulates the chosen design as a look does, twice
    assert search_studies(10, 10, 0.8, 0.2)[-1] == (10, 96)


def test_the_time_is_each_study_scaled_by_its_size_and_shared_among_workers() -> None:
    # 0.01 s a study at 10 subjects, linear in subjects: ladder 10..160 (48 each), then 3 x 48 + 96 at 200
    got = search_time(0.01, float, 10, 200, 0.8, 0.2, workers=2)
    assert got.studies == 480
    assert got.seconds == pytest.approx(0.01 * (48 * (10 + 20 + 40 + 80 + 160) + 240 * 200) / 10 / 2)


def test_a_search_past_the_limit_is_refused_with_the_largest_range_that_fits() -> None:
    with pytest.raises(ct.InputError) as refused:
        check_time(20, 0.01, float, "subjects", range(10, 201), 0.8, 0.2, workers=2)
    # at top 136: (48 x 150 + 240 x 136) x 0.01 / 10 / 2 = 19.9 s; at 137: 20.04 s
    assert str(refused.value) == (
        "`max_seconds` 20: this plan's search may take up to 31 s if it settles at the top of the range (480 "
        "simulated studies on 2 workers; one takes "
        "0.01 s at 10 subjects, more at larger designs); the largest range that fits is `subjects` 10:136 (up to "
        "20 s), or raise `max_seconds`")
    assert check_time(40, 0.01, float, "subjects", range(10, 201), 0.8, 0.2, workers=2).top == 200


def test_nothing_fits_and_a_design_field_axis_is_offered_as_its_values() -> None:
    with pytest.raises(ct.InputError, match=r"not even 10 subjects fits: raise `max_seconds` or `mc_se`"):
        check_time(1, 0.1, float, "subjects", range(10, 201), 0.8, 0.03, workers=1)
    with pytest.raises(ct.InputError,
                       match=r"the largest range that fits is `design` n_contexts=50,100,200 \(up to 55 s\)"):
        check_time(60, 0.05, float, "n_contexts", (50, 100, 200, 400), 0.8, 0.2, workers=1)


def test_largest_fitting_bisects_a_lazy_range() -> None:
    assert largest_fitting(range(1, 10**9), lambda v: v <= 123_456_789) == 123_456_789
    assert largest_fitting(range(5, 9), lambda v: False) is None


def test_the_plan_refuses_before_the_search_from_an_injected_per_study_cost(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The library and the command line: the study timed at 0.5 s (injected), a 60 s limit on 1 worker."""
    monkeypatch.setattr(estimate, "timed_simulation", lambda spec, smallest: (0.5, 0.5))
    monkeypatch.setattr(estimate, "timed_one", lambda spec, point: None)  # the largest not timed: proportional
    asked = {"model": "rw-pm", "effect": {"optimism_bias": 0.2}, "llm": MINI, "subjects": "10:200", "workers": 1}
    with pytest.raises(ct.InputError) as refused:
        ct.plan("instrumental-learning", **asked, max_seconds=60)
    message = str(refused.value)
    assert message.startswith("`max_seconds` 60: this plan's search may take up to ")
    # timed at 96 trials a subject, scaled to the top of the trials searched (5 x 96): 2.5 s at 10 subjects
    assert "one takes 2.5 s at 10 subjects, 120 visits per casino (480 trials per run)," in message
    assert "not even 10 subjects fits" in message
    assert run_cli(["plan", "instrumental-learning", "--model", "rw-pm", "--effect", "optimism_bias=0.2", "--llm",
                    MINI, "--subjects", "10:200", "--workers", "1", "--max-seconds", "3000"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: --max-seconds 3000: this plan's search may take up to ")
    assert err[-1].endswith("or raise --max-seconds") and "the largest range that fits is --subjects 10:" in err[-1]


def test_the_limit_is_bounded_and_goes_with_a_search() -> None:
    with pytest.raises(ct.InputError, match=r"`max_seconds` must be in \[1, 2.592e\+06\]"):
        ct.plan("instrumental-learning", model="rw-pm", effect={"optimism_bias": 0.2}, llm=MINI, max_seconds=99_999_999)
    with pytest.raises(ct.InputError, match="max_seconds"):
        ct.plan("instrumental-learning", model="rw-pm", precision={"alpha_pos": 0.1}, max_seconds=60)


def test_a_fixed_cost_per_study_is_not_scaled_by_the_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """The smallest design (10 subjects x 96 trials) timed at 0.5 s, the largest (200 x 480) at 5.5 s: a study
    at 10 subjects x 480 trials takes 0.5 + 5 x (4,800 - 960) / (96,000 - 960) = 0.70 s, not 2.5 s."""
    monkeypatch.setattr(estimate, "timed_simulation", lambda spec, smallest: (0.5, 0.5))
    monkeypatch.setattr(estimate, "timed_one", lambda spec, point: 5.5)
    with pytest.raises(ct.InputError) as refused:
        ct.plan("instrumental-learning", model="rw-pm", effect={"optimism_bias": 0.2}, llm=MINI, subjects="10:200",
                workers=1, max_seconds=60)
    assert "one takes 0.7 s at 10 subjects, 120 visits per casino (480 trials per run)," in str(refused.value)


def test_the_affine_cost_runs_through_both_timings_and_never_falls() -> None:
    cost = estimate.affine_cost((100.0, 1.0), (1100.0, 3.0))
    assert [cost(100.0), cost(600.0), cost(1100.0)] == pytest.approx([1.0, 2.0, 3.0])
    flat = estimate.affine_cost((100.0, 1.0), (1100.0, 0.8))  # the larger timed faster: the timings' noise
    assert flat(1100.0) == pytest.approx(1.0)
