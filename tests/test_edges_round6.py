"""Hard edges, round 6 (the LOW list): each test fails on the code before its fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cogtestbed.cli import app

FORGED = "\u001b[2K\rerror: forged\u001b]0;title\u0007\u202e"


def _validate(path: Path) -> list[str]:
    res = CliRunner().invoke(app, ["validate", str(path)])
    assert res.exit_code == 1, res.output
    return res.stdout.splitlines()


# ----------------------------------------------------------------------------- validate
def test_validate_escapes_what_a_terminal_would_act_on_and_never_says_nan(tmp_path: Path) -> None:
    """A participant id with ANSI/OSC escapes, a carriage return and a right-to-left override is printed escaped
    (no forged ``error:`` line); a line that is no record names no participant (before: ``(participant nan of
    nan)``, the table's missing values)."""
    path = tmp_path / "prompts.jsonl"
    record = {"text": "no marks", "experiment": "e", "participant": FORGED}
    path.write_bytes(json.dumps(record).encode() + b"\n" + b'{"text": "<<a>>", "experiment": "e"}\x00\n')
    lines = _validate(path)
    assert len(lines) == 2
    assert lines[0] == (f"{path}:1 (participant \\x1b[2K\\rerror: forged\\x1b]0;title\\x07\\u202e of e): text: "
                        "markers_missing: the text marks no choice with <<…>>")
    assert lines[1] == f"{path}:2: line: json: not JSON: Extra data (column 37)"
    assert not any(c in "\n".join(lines) for c in "\x1b\r\x07\u202e\x00")


@pytest.mark.parametrize(("rt", "problem"), [("NaN", "RT nan is not a finite number"),
                                             ("Infinity", "RT inf is not a finite number"),
                                             ("-5", "RT -5 is negative"),
                                             ("1e308", "RT 1e+308 is over 3,600,000 ms (an hour)")])
def test_an_rt_that_is_no_reaction_time_is_a_defect(tmp_path: Path, rt: str, problem: str) -> None:
    from cogtestbed.data.psych201_validate import validate_psych201

    path = tmp_path / "prompts.jsonl"
    path.write_text('{"text": "You press <<a>>. You press <<b>>.", "experiment": "e", "participant": 1, '
                    f'"RTs": [612, {rt}]}}\n')
    defects = validate_psych201(path)
    assert [(d.field, d.kind, d.message) for d in defects] == [("RTs[1]", "rt_value", problem)]


def test_validate_help_names_the_input_limit() -> None:
    res = CliRunner().invoke(app, ["validate", "--help"], env={"COLUMNS": "200"})
    assert res.exit_code == 0 and "COGTESTBED_MAX_INPUT_MB" in res.stdout and "50 MiB" in res.stdout


# ----------------------------------------------------------------------------- the o3 emulation
def test_the_o3_emulation_answers_n_choices_or_a_typed_400(tiny_chat) -> None:
    """``n: 50`` gets 50 choices, their hidden tokens each billed (before: 200 and one choice); an ``n`` the API
    refuses gets OpenAI's 400 with its error shape."""
    import httpx

    from cogtestbed.llm_adapters.servers.emulators.reasoning import MAX_CHOICES, ReasoningModel, format_answer
    from cogtestbed.llm_adapters.servers.server import Billing, serve

    billing = Billing()
    body = {"model": "o3", "messages": [{"role": "user", "content": "Machine B and Machine J?"}],
            "max_completion_tokens": 2000, "reasoning_effort": "low"}
    with serve({"o3": tiny_chat}, billing=billing, reasoning={"o3": ReasoningModel(answer=format_answer)}) as url:
        one = httpx.post(f"{url}/chat/completions", json=body).json()
        many = httpx.post(f"{url}/chat/completions", json={**body, "n": 50}, timeout=60).json()
        refused = [httpx.post(f"{url}/chat/completions", json={**body, "n": n}) for n in (0, MAX_CHOICES + 1, 2.5)]
    assert [c["index"] for c in many["choices"]] == list(range(50))
    assert all(c["message"]["content"] == "B" for c in many["choices"])
    assert many["choices"][0] == one["choices"][0]  # the first choice is the single answer's
    hidden = many["usage"]["completion_tokens_details"]["reasoning_tokens"]
    assert hidden > 50 * 10 and many["usage"]["completion_tokens"] == hidden + 50  # "B" is one token a choice
    assert many["usage"]["prompt_tokens"] == one["usage"]["prompt_tokens"]  # the prompt billed once
    for answer in refused:
        error = answer.json()["error"]
        assert answer.status_code == 400 and error["param"] == "n" and error["code"] == "invalid_value"


# ----------------------------------------------------------------------------- redaction
def test_a_reversed_key_is_redacted_like_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """A server echoing the key backwards: the one redaction function removes it (before it reached stderr,
    run.json and the cache), a reversed piece of it too."""
    from cogtestbed.redact import REDACTED, redact

    key = "q7Hf2kLm9PzX4vRt8bWn3cYd"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    assert redact(f"echo: {key[::-1]}!") == f"echo: {REDACTED}!"
    assert redact(f"part {key[::-1][:12]} end") == f"part {REDACTED} end"
    assert redact("an ordinary answer: Machine B") == "an ordinary answer: Machine B"


# ----------------------------------------------------------------------------- populations
def test_an_unconverged_shipped_population_warns_on_use_and_its_manifest_says_so(tmp_path: Path) -> None:
    """``human:spektor2024-all`` passes the R-hat/divergence gate but its fit's own verdict is NOT converged
    (tail ESS 174 < 400): using it warns in one line as other unconverged populations do, and the table's
    manifest carries that (before: silent, and the manifest said nothing)."""
    import warnings

    import cogtestbed as ct
    from cogtestbed.inference.population import PopulationWarning, load_population
    from cogtestbed.trials import read_manifest

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert load_population("human:spektor2024-all").fit["converged"] is False  # reading it is no use
        assert not seen
        ct.simulate("risky-choice", "prospect-theory", subjects=2, seed=0, population="human:spektor2024-all",
                    output=tmp_path / "t.parquet")
    said = [str(w.message) for w in seen if w.category is PopulationWarning]
    assert said == ["population spektor2024-all's fit did not converge by its own verdict (NOT converged: min tail "
                    "ESS 174 < 400); its draws are used as they are"]
    recorded = read_manifest(tmp_path / "t.parquet")["population"]
    assert recorded["converged"] is False and recorded["warning"] == said[0]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        load_population("human:spektor2024", use=True)  # converged: no warning
    assert not seen


# ----------------------------------------------------------------------------- temp files
def test_a_killed_streamed_simulate_leaves_no_temp_file_after_the_next_run(tmp_path: Path) -> None:
    """A SIGKILL during ``simulate -o`` leaves ``.t.parquet.XXXX.tmp`` (its partial table) and the claim marker;
    the next run on that output takes the dead claim over and removes them (before: 23.5 MB left forever).
    Another file's temporary files stay."""
    from cogtestbed.cli import run_cli
    from cogtestbed.outputs import CLAIM_FILE

    out = tmp_path / "t.parquet"
    partial = tmp_path / ".t.parquet.k1ll3d0x.tmp"
    partial.write_bytes(b"PAR1" + b"\0" * 1000)
    (tmp_path / ".t.parquet.manifest.json.a1b2c3d4.tmp").write_text("{")
    (tmp_path / f".t.parquet{CLAIM_FILE}").write_text("999999999")  # a dead writer's claim
    other = tmp_path / ".u.parquet.k1ll3d0x.tmp"
    other.write_text("another output's")
    assert run_cli(["simulate", "instrumental-learning", "-a", "rw", "--subjects", "2", "-o", str(out)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [".u.parquet.k1ll3d0x.tmp", "t.parquet",
                                                          "t.parquet.manifest.json"]


# ----------------------------------------------------------------------------- transformers' notice
def test_scoring_prints_no_past_key_values_future_warning(tiny) -> None:
    """Scoring continuations of several tokens passes the context's KV cache as ``past_key_values``: the demo
    printed transformers' FutureWarning about it (before); that one warning is silenced, no other."""
    import warnings

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        tiny.score("Which machine do you choose? Machine", [" B and more words", " J or other words"])
        warnings.warn("another FutureWarning", FutureWarning, stacklevel=1)
    texts = [str(w.message) for w in seen]
    assert not any("past_key_values" in t for t in texts), texts
    assert "another FutureWarning" in texts


# ----------------------------------------------------------------------------- the call budget (items 7, 8)
def _run(url: str, tmp: Path, *extra: str) -> tuple[int, str]:
    res = CliRunner().invoke(app, ["run", "instrumental-learning", "--llm", "openai:tiny-random", "--mode",
                                   "completions", "--base-url", url, "--cache", str(tmp / "cache.sqlite"),
                                   "--design", "visits_per_casino=2", "--subjects", "3", *extra])
    return res.exit_code, res.stderr


def test_a_budget_of_exactly_the_runs_calls_finishes_against_an_endpoint_failing_every_other_request(
        server, tmp_path: Path) -> None:
    """3 subjects x 8 calls and ``--max-calls 24``: every other request answered 503 (retried, billed nothing) -
    the run completes with 24 calls (before: each retry was a call, and it stopped at half its subjects)."""
    from cogtestbed.llm_adapters.servers.server import Fault

    url, faults = server
    faults.add(*[f for _ in range(24) for f in (Fault("status", 503, retry_after=0.0), Fault("delay", seconds=0))])
    code, err = _run(url, tmp_path, "--max-calls", "24", "-o", str(tmp_path / "run"))
    faults.pending.clear()
    assert code == 0, err
    stats = json.loads((tmp_path / "run" / "run.json").read_text())["stats"]
    assert (stats["subjects_complete"], stats["total_calls"], stats["retries"], stats["stopped"]) == (3, 24, 24, None)


def test_a_resumed_run_counts_its_own_earlier_answers_as_paid_not_as_cache_hits(server, tmp_path: Path) -> None:
    """A run stopped by its budget after one subject and resumed with more: the summary counts the 24 calls the
    run directory paid over both invocations, none from the cache (before: "24 calls, 8 from the cache, 16 new"
    and only the second invocation's cost); a fresh run directory on the same cache is all cache hits."""
    url, _ = server
    run = str(tmp_path / "run")
    code, err = _run(url, tmp_path, "--max-calls", "10", "-o", run)
    assert code == 3 and "stopped: budget" in err, err
    code, err = _run(url, tmp_path, "-o", run, "--resume", "--add-budget", "calls=14")
    assert code == 0, err
    stats = json.loads((tmp_path / "run" / "run.json").read_text())["stats"]
    assert (stats["calls_total"], stats["cache_hits"], stats["new_calls"], stats["total_calls"]) == (24, 0, 16, 24)
    said = " ".join(err.split())  # the console wraps its lines
    assert said.endswith("/run; 24 calls, 0 from the cache; paid by this run: 24 calls (16 calls in this invocation)")
    code, err = _run(url, tmp_path, "-o", str(tmp_path / "again"))
    assert code == 0, err
    again = json.loads((tmp_path / "again" / "run.json").read_text())["stats"]
    assert (again["cache_hits"], again["new_calls"], again["total_calls"]) == (24, 0, 0)
