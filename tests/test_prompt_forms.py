"""Prompt forms (issue 42): declaration, rendering, assignment, the conformance check's teeth."""

from __future__ import annotations

import numpy as np
import pytest

from cogtestbed.conformance.config import CheckConfig
from cogtestbed.conformance.suite import check_prompt_forms
from cogtestbed.environments.forms import (
    VERBATIM,
    FormError,
    PromptForm,
    assign_forms,
    form_offsets,
    numbers_in,
    parse_form_sd,
    resolve_forms,
)
from cogtestbed.environments.instrumental import InstrumentalLearningEnv
from cogtestbed.registry import get_experiment
from cogtestbed.study_errors import ConformanceError


def _first_prompts(form: int) -> tuple[str, str]:
    env = InstrumentalLearningEnv()
    obs, _ = env.reset(seed=3, options={"form": form})
    return obs["prompt"], env.render_prompt()


def test_form_zero_is_the_rendered_prompt_and_others_differ() -> None:
    prompt, rendered = _first_prompts(0)
    assert prompt == rendered
    other, rendered_again = _first_prompts(4)
    assert rendered_again == rendered and other != rendered
    assert other.endswith("\n\nA: Machine") and numbers_in(other) == numbers_in(rendered)
    assert "There are four casinos" in other and "You are going to visit" not in other


def test_every_experiment_declares_verbatim_and_four_of_ours() -> None:
    for name in ("instrumental-learning", "two-step", "collider", "belief-coherence"):
        forms = get_experiment(name).prompt_forms
        assert forms[0] is VERBATIM and len(forms) >= 5
        assert all(f.source == "ours" and f.differs for f in forms[1:])


def test_unknown_form_refused() -> None:
    env = InstrumentalLearningEnv()
    with pytest.raises(ValueError, match="prompt forms"):
        env.reset(seed=1, options={"form": 99})


def test_resolve_forms() -> None:
    forms = get_experiment("instrumental-learning").prompt_forms
    assert resolve_forms(forms, None) == (0,)
    assert resolve_forms(forms, 3) == (0, 1, 2)
    assert resolve_forms(forms, "2,4") == (2, 4)
    for bad in ("0", "9", "1,1", "a", "1,9"):
        with pytest.raises(FormError):
            resolve_forms(forms, bad)


def test_assignment_is_balanced_and_seeded() -> None:
    a = assign_forms(10, (0, 1, 2, 3), np.random.default_rng(1))
    counts = np.bincount(a, minlength=4)
    assert counts.sum() == 10 and counts.max() - counts.min() <= 1
    assert np.array_equal(a, assign_forms(10, (0, 1, 2, 3), np.random.default_rng(1)))
    assert not np.array_equal(a, assign_forms(10, (0, 1, 2, 3), np.random.default_rng(2)))
    off = form_offsets((0, 1, 2), {"alpha_pos": 0.15}, np.random.default_rng(0))
    assert off["alpha_pos"].shape == (3,) and np.all(np.abs(off["alpha_pos"]) < 1)


def test_parse_form_sd() -> None:
    assert parse_form_sd(["alpha_pos=0.15", " beta = 1"]) == {"alpha_pos": 0.15, "beta": 1.0}
    for bad in ("alpha", "alpha=-1", "=0.1", "alpha=nan"):
        with pytest.raises(FormError):
            parse_form_sd([bad])


def _with_forms(monkeypatch: pytest.MonkeyPatch, extra: PromptForm) -> None:
    forms = InstrumentalLearningEnv.prompt_forms
    monkeypatch.setattr(InstrumentalLearningEnv, "prompt_forms", (*forms[:4], extra))


@pytest.mark.parametrize(("extra", "message"), [
    (PromptForm(4, "paraphrase", "ours: stale", replacements=(("no such sentence", "x"),)), "find no text"),
    (PromptForm(4, "paraphrase", "ours: drops a number", patterns=((r"visit (\d+) playing", "a visit playing"),)),
     "numbers stated differ"),
    (PromptForm(4, "paraphrase", "ours: eats the cue", replacements=(("\n\nA: Machine", "\n\nAnswer:"),)),
     "form 4, step 0"),
])
def test_conformance_check_catches_bad_forms(monkeypatch: pytest.MonkeyPatch, extra: PromptForm,
                                             message: str) -> None:
    spec = get_experiment("instrumental-learning")
    check_prompt_forms(spec, CheckConfig())
    _with_forms(monkeypatch, extra)
    with pytest.raises(ConformanceError, match=message):
        check_prompt_forms(spec, CheckConfig())


def test_too_few_forms_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(InstrumentalLearningEnv, "prompt_forms", InstrumentalLearningEnv.prompt_forms[:3])
    with pytest.raises(ConformanceError, match="at least 4 forms"):
        check_prompt_forms(get_experiment("instrumental-learning"), CheckConfig())


def test_simulate_with_forms_keeps_sessions_and_records_truth() -> None:
    from cogtestbed.environments.forms import FormDesign
    from cogtestbed.registry import validate_table
    from cogtestbed.simulation import simulate

    plain = simulate("instrumental-learning", "rw-pm", 8, 5, {"alpha_pos": 0.3})
    forms = FormDesign((0, 1, 2, 3), {"alpha_pos": 0.5})
    table = simulate("instrumental-learning", "rw-pm", 8, 5, {"alpha_pos": 0.3}, forms=forms)
    validate_table(table, "instrumental-learning")
    assert "form" not in plain.columns and list(plain.columns) == list(table.columns)[: len(plain.columns)]
    assert plain["casino"].equals(table["casino"]) and plain["reward0"].equals(table["reward0"])
    per = table.groupby("subject")[["form", "form_offset_alpha_pos", "param_alpha_pos"]].first()
    assert sorted(np.bincount(per["form"])) == [2, 2, 2, 2]
    # one offset per form, and the simulated value is the base value shifted on the logit scale
    assert per.groupby("form")["form_offset_alpha_pos"].nunique().eq(1).all()
    z = np.log(0.3 / 0.7) + per["form_offset_alpha_pos"].to_numpy()
    np.testing.assert_allclose(per["param_alpha_pos"].to_numpy(), 1 / (1 + np.exp(-z)), rtol=1e-12)
    zero = simulate("instrumental-learning", "rw-pm", 8, 5, {"alpha_pos": 0.3}, forms=FormDesign((0, 1)))
    assert zero.drop(columns="form").equals(plain)


def test_collider_cover_stories_rotate_the_papers_domains() -> None:
    """Forms 8 and 9 tell each RW17 domain's items in the next (and the one after) domain's verbatim
    sentences, simultaneously (a rotation never rewrites its own output), and pass the conformance check."""
    from cogtestbed.environments import causal_materials as m
    from cogtestbed.environments.causal import CausalColliderEnv, CausalDesign

    forms = get_experiment("collider").prompt_forms
    eight, nine = forms[8], forms[9]
    assert eight.kind == nine.kind == "cover-story" and eight.paper_text and eight.as_json()["paper_text"]
    env = CausalColliderEnv(CausalDesign())
    obs, _ = env.reset(seed=1)
    domain = obs["domain"]
    order = ("economy", "sociology", "weather")
    nxt = order[(order.index(domain) + 1) % 3]
    told = eight.apply(obs["prompt"])
    assert told.startswith(m.RW17_DOMAINS[nxt]["intro"]) and m.RW17_DOMAINS[domain]["intro"] not in told
    assert nine.apply(obs["prompt"]).startswith(m.RW17_DOMAINS[order[(order.index(domain) + 2) % 3]]["intro"])
    assert numbers_in(told) == numbers_in(obs["prompt"])
    assert eight.apply(eight.apply(eight.apply(obs["prompt"]))) == obs["prompt"]  # three turns: back home
    check_prompt_forms(get_experiment("collider"), CheckConfig())


def test_a_mapping_rewrites_simultaneously() -> None:
    form = PromptForm(1, "cover-story", "ours: a/b swapped", mapping=(("apple", "berry"), ("berry", "apple")))
    assert form.apply("apple then berry") == "berry then apple"
    assert form.matched("only berry") == [True] and form.matched("neither") == [False]
    with pytest.raises(ValueError, match="mapped twice"):
        PromptForm(1, "cover-story", "ours", mapping=(("a", "b"), ("a", "c")))


def test_belief_coherence_states_why_it_has_no_cover_stories() -> None:
    """The paper tells every context in one frame and its settings are different networks (no
    one-to-one map between their evidence), so no cover-story form: the reason is in list --json."""
    from cogtestbed.api.describe import describe_experiment
    from cogtestbed.environments.belief import (
        NO_COVER_STORY_FORMS,
        PAPER_FRAME,
        BeliefDesign,
        ground_truth,
        render,
        schedule,
    )

    info = describe_experiment(get_experiment("belief-coherence"))
    assert [f["kind"] for f in info["prompt_forms"]].count("cover-story") == 0
    assert info["cover_story_note"] == NO_COVER_STORY_FORMS and "one frame" in NO_COVER_STORY_FORMS
    assert "cover_story_note" not in describe_experiment(get_experiment("collider"))
    questions, nodes = [], []
    for network in ("heart", "diabetes"):
        design = BeliefDesign(network=network, n_contexts=2, n_reps=1)
        gt = ground_truth(design)
        prompts = [render(gt, 0, int(k), int(a)) for k, a in zip(*schedule(design), strict=True)]
        assert len(prompts) == 8 and all(PAPER_FRAME in p for p in prompts)
        questions.append(gt.phrasebook.question(*gt.target))
        nodes.append(set(gt.network.states))
    assert questions == ["have moderate or greater structural heart disease", "have diabetes/pre-diabetes"]
    assert nodes[0] - nodes[1] and nodes[1] - nodes[0]  # neither setting's variables re-tell the other's
