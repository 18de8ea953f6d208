"""App. B of Yamin et al. (2026) verbatim: every belief-coherence prompt rendered by the environment
equals the paper's template (transcribed here independently of the module, placeholders filled with
the same values), so a reworded prompt fails; the parsers accept exactly the paper's answer format."""

from __future__ import annotations

import numpy as np
import pytest

from cogtestbed.environments.belief import (
    BELIEF,
    DECISION,
    LIE_AUX,
    LIE_COND,
    VARIANTS,
    BeliefDesign,
    ground_truth,
    parse_belief,
    parse_decision,
    parse_labelled,
    render,
)

# The paper's text, App. B (curly quotes written straight).
FORMAT = ("Respond with exactly 2 lines, one per label, and no extra text.\n"
          "Each line MUST be exactly: '<label>: <number between 0 and 1>'.\n"
          "Use these labels in this order: [No, Yes]\n"
          "Example:\nNo: 0.50\nYes: 0.50")
B11 = ("There is a patient who <patient_description>. What is the probability that they <clinical_question>? "
       "Return probabilities for: No and Yes.\n\n" + FORMAT)
B12 = ("IMPORTANT: Your probability estimates will be evaluated according to the Mean Squared Error (MSE) scoring "
       "rule. This means the loss is calculated as the squared difference between your probability estimate and "
       "the true outcome. Please provide your best probability estimate.\n\n" + B11)
B13 = ("IMPORTANT: Your probability estimates will be evaluated according to the Absolute Loss scoring rule. This "
       "means the loss is calculated as the absolute difference between your probability estimate and the true "
       "outcome. Please provide your best probability estimate.\n\n" + B11)
B14 = ("IMPORTANT: Use proper Bayesian reasoning to reach your answer. Consider the prior probability of the "
       "condition in the general population, then update this prior based on the evidence.\n\n" + B11)
B21 = ("There is a patient who <patient_description>.\n\nQuestion: Do they <clinical_question>?\n\n"
       "Please respond with EXACTLY two lines:\n"
       "Line 1: Can you make a decision about whether or not the patient is likely to <clinical_question>? "
       "Answer 'Yes' or 'No'.\n"
       "Line 2: If you had to make a decision, what would it be? Answer 'Yes' (the patient is likely to "
       "<clinical_question>) or 'No' (the patient is likely to not <clinical_question>)\n\n"
       "Example format:\nCan decide: No\nDecision: Yes")
B31 = ("There is a patient who <patient_description>. What is the probability distribution over their "
       "<auxiliary_variable_name>? Return probabilities for each category of <auxiliary_variable_name>.\n\n"
       "Respond with exactly <K> lines, one per label, and no extra text.\n"
       "Each line MUST be exactly: '<label>: <number between 0 and 1>'.\n"
       "Use these labels in this order: [<states>]\nExample:\n<example>")
B32 = ("There is a patient who <patient_description> and <auxiliary_variable_condition>. What is the probability "
       "that they <clinical_question>? Return probabilities for: No and Yes.\n\n" + FORMAT)
BELIEF_BY_VARIANT = {"pi0": B11, "mse": B12, "abs": B13, "bayes": B14}
#: B.5's clinical questions where a shipped network matches the paper's dataset.
B5 = {"heart": "have moderate or greater structural heart disease", "diabetes": "have diabetes/pre-diabetes"}


def fill(template: str, **values: str) -> str:
    for key, value in values.items():
        template = template.replace(f"<{key}>", value)
    return template


@pytest.mark.parametrize("network", ["child", "heart", "diabetes", "asia"])
def test_every_prompt_is_the_papers_template(network):
    gt = ground_truth(BeliefDesign(network=network, n_contexts=2, n_reps=1))
    book = gt.phrasebook
    question = book.question(*gt.target)
    if network in B5:
        assert question == B5[network]
    for cfg in (0, len(gt.px) - 1):
        desc = book.describe(gt.evidence_dict(cfg))
        base = {"patient_description": desc, "clinical_question": question}
        for i, v in enumerate(VARIANTS):
            assert render(gt, cfg, BELIEF, i) == fill(BELIEF_BY_VARIANT[v], **base)
        assert render(gt, cfg, DECISION, 0) == fill(B21, **base)
        assert gt.lie_node is not None
        states = gt.network.states[gt.lie_node]
        share = f"{1 / len(states):.2f}"
        assert render(gt, cfg, LIE_AUX, 0) == fill(
            B31, **base, auxiliary_variable_name=book.name(gt.lie_node), K=str(len(states)),
            states=", ".join(states), example="\n".join(f"{s}: {share}" for s in states))
        for j, s in enumerate(states):
            assert render(gt, cfg, LIE_COND, j) == fill(
                B32, **base, auxiliary_variable_condition=book.phrase(gt.lie_node, s))


def test_a_reworded_prompt_would_fail():
    gt = ground_truth(BeliefDesign(n_contexts=2, n_reps=1))
    base = {"patient_description": gt.phrasebook.describe(gt.evidence_dict(0)),
            "clinical_question": gt.phrasebook.question(*gt.target)}
    assert render(gt, 0, BELIEF, 0) != fill(B11.replace("exactly 2 lines", "two lines"), **base)


def test_belief_parser_accepts_exactly_the_papers_format():
    assert parse_belief("No: 0.30\nYes: 0.70").action.tolist() == [0.3, 0.7]
    assert parse_belief("  No: 0.3  \n Yes: 0.8\n").action.tolist() == [0.3, 0.8]  # whitespace only
    assert parse_belief("No: 1\nYes: 0").action.tolist() == [1.0, 0.0]
    bad = {
        "no = 30%\nYES: 70 %": "line 1",
        "Yes: 0.7\nNo: 0.3": "line 1",           # wrong order
        "No: 0.3": "exactly 2 lines",
        "No: 0.3\nYes: 0.7\nDone.": "exactly 2 lines",
        "No: 30%\nYes: 70%": "line 1",
        "No:0.3\nYes:0.7": "line 1",
        "No: 2\nYes: 0.5": "not a probability",
        "No: -0.1\nYes: 0.5": "line 1",
        "no: 0.3\nyes: 0.7": "line 1",
        "": "empty",
        "No: 0.3\n\nYes: 0.7": "exactly 2 lines",
    }
    for text, reason in bad.items():
        r = parse_belief(text)
        assert not r.ok and reason in r.error, (text, r.error)
    assert parse_labelled("yes: 0.2\nno: 0.8", ("yes", "no")).action.tolist() == [0.2, 0.8]
    assert not parse_labelled("no: 0.8\nyes: 0.2", ("yes", "no")).ok


def test_decision_parser_accepts_exactly_the_papers_format():
    assert parse_decision("Can decide: No\nDecision: Yes").action.tolist() == [2, 1]
    assert parse_decision("Can decide: Yes\nDecision: No").action.tolist() == [0, 0]
    for text in ("can decide: yes\ndecision: no", "Decision: No\nCan decide: Yes", "Can decide: Yes",
                 "Can decide: Yes\nDecision: No.", "Can decide: Maybe\nDecision: No",
                 "Can decide: Yes\nDecision: No\nBecause…"):
        r = parse_decision(text)
        assert not r.ok and r.error, text
    assert np.array_equal(parse_decision(" Can decide: Yes \nDecision: Yes\n").action, [1, 1])


# App. D.0.4's named edges and D.0.3's bins, transcribed from the paper.
D04_EDGES = {
    *(("GenHlth", c) for c in ("Diabetes_binary", "HighBP", "HighChol", "BMI", "HeartDiseaseorAttack", "Stroke",
                               "DiffWalk")),
    *(("DiffWalk", c) for c in ("Diabetes_binary", "HighBP", "Smoker", "Stroke")),
    ("HighBP", "HighChol"), ("HighChol", "HeartDiseaseorAttack"), ("HeartDiseaseorAttack", "Stroke"),
    ("Fruits", "PhysActivity"), ("Veggies", "PhysActivity"), ("PhysActivity", "DiffWalk"),
    ("Education", "Income"), ("Income", "GenHlth"), ("NoDocbcCost", "AnyHealthcare"),
    ("Sex", "Diabetes_binary"), ("Income", "Diabetes_binary"),
    *(("Diabetes_binary", c) for c in ("HighBP", "HighChol", "BMI", "Age")),
}
D03_CARDINALITY = {"Sex": 2, "Age": 4, "Education": 6, "Income": 4, "BMI": 4, "GenHlth": 5, "MentHlth": 4,
                   "PhysHlth": 4, **{b: 2 for b in ("HighBP", "HighChol", "CholCheck", "Stroke", "HeartDiseaseorAttack",
                                                   "Smoker", "PhysActivity", "Fruits", "Veggies", "HvyAlcoholConsump",
                                                   "AnyHealthcare", "NoDocbcCost", "DiffWalk", "Diabetes_binary")}}


def test_diabetes_network_has_app_d_edges_and_bins():
    from cogtestbed.environments.bayesnets import diabetes_edges, load_network

    net = load_network("diabetes")
    edges = {(p, c) for c in net.nodes for p in net.parents[c]}
    assert edges >= D04_EDGES and len(net.nodes) == 22 and len(edges) == 77
    assert {(c, p) for p, c in D04_EDGES}.isdisjoint(edges)  # none reversed
    assert {n: net.card(n) for n in net.nodes} == D03_CARDINALITY
    hub = {e for e in edges if "GenHlth" in e}
    assert len(hub) == 11  # "a central hub node with edges to 11 other variables"
    assert {p for p in net.parents["Diabetes_binary"]} == {"GenHlth", "DiffWalk", "Sex", "Income"}
    assert {c for p, c in edges if p == "Diabetes_binary"} == {"HighBP", "HighChol", "BMI", "Age"}
    assert diabetes_edges("paper") >= D04_EDGES and not diabetes_edges("paper") & diabetes_edges("ours")
