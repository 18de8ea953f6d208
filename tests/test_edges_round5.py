"""Hard edges, fifth round (issue 69): secrets in every encoding, typed errors at every table door,
honest run records.  Every server here is on 127.0.0.1; nothing calls a hosted API."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from urllib.parse import quote, unquote

import pytest

from cogtestbed.cli import run_cli
from cogtestbed.redact import REDACTED, redact

#: A self-hosted server's key: holds / + = and is not credential-shaped (removed because it is configured).
KEY = "Lk7/q+Zt9=Wx2/Rv5+Ny8=Hb3/Mc6+Pd"


def _forbidden(key: str) -> list[str]:
    """Every piece of ``key`` no written byte may hold: each 8-character piece of the raw key, and each
    10-character piece of its base64 forms (standard and URL-safe, any alignment, inner characters)."""
    pieces = {key[i:i + 8] for i in range(len(key) - 7)}
    for prefix in (b"", b"x", b"xy"):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            inner = encode(prefix + key.encode()).decode().rstrip("=")[3:-3]
            pieces |= {inner[i:i + 10] for i in range(len(inner) - 9)}
    return sorted(pieces)


def _leaks(text: str, key: str = KEY) -> list[str]:
    """The pieces of ``key`` found in ``text``, read as it is, percent-decoded and JSON-unescaped."""
    views = (text, unquote(text), unquote(unquote(text)), text.replace("\\/", "/"))
    return [p for p in _forbidden(key) if any(p in v for v in views)]


def every_file_text(root: Path) -> dict[str, str]:
    """Every file under ``root`` as text: raw bytes, and parquet tables decoded cell by cell."""
    import pandas as pd

    texts = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        texts[str(path)] = path.read_bytes().decode("latin-1")
        if path.suffix == ".parquet":
            frame = pd.read_parquet(path)
            cells = [str(c) for c in frame.columns] + [repr(v) for v in frame.to_numpy().ravel()]
            texts[f"{path} (decoded)"] = "\n".join(cells)
    return texts


# --------------------------------------------------------------------------------- 1. the redaction
@pytest.mark.parametrize("key", [KEY, "plainAlnumKey0123456789", "sk-proj-Ab3/De+Gh=Jk9"])
def test_redact_removes_the_key_in_every_form_and_piece(key: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from support.leaky_server import echo_forms

    monkeypatch.setenv("SELF_HOSTED_API_KEY", key)
    forms = echo_forms(key)
    lower = re.sub("%[0-9A-F]{2}", lambda m: m.group().lower(), quote(key, safe=""))
    forms += [lower, quote(quote(key, safe=""), safe=""), key.replace("/", "\\/"),
              key[:8], key[-9:], key[3:14]]
    for prefix, suffix in ((b"", b""), (b"a", b"bc"), (b"ab", b"c"), (b"abc", b"")):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            forms.append(encode(prefix + key.encode() + suffix).decode())
    for form in forms:
        said = redact(f"the server said {form} and nothing else")
        assert said.startswith("the server said ") and said.endswith(" and nothing else"), said
        assert REDACTED in said and not _leaks(said, key), (form, said)


def test_the_leaky_server_echoes_the_key_on_every_route(leaky) -> None:
    import httpx
    from support.leaky_server import echo_forms

    url, _ = leaky
    asks = {"completions": {"model": "tiny-random", "prompt": "Hi", "max_tokens": 2},
            "chat/completions": {"model": "tiny-random-chat", "messages": [{"role": "user", "content": "Hi"}],
                                 "max_tokens": 2},
            "messages": {"model": "tiny-random-chat", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2}}
    for path, body in asks.items():
        resp = httpx.post(f"{url}/{path}", json=body, headers={"x-api-key": KEY})
        answer = resp.json()
        text = json.dumps(answer.get("choices") or answer.get("content"))
        assert resp.status_code == 200 and all(json.dumps(form)[1:-1] in text for form in echo_forms(KEY)), path
        assert resp.headers["x-echo-0"] == KEY
        assert path == "messages" or answer["system_fingerprint"].startswith("fp_")


@pytest.mark.parametrize("token", ["sk%2Dproj%2DAbCdEfGh12345678", "sk-proj%2DAbCdEfGh12345678",
                                   "sk-pro%6A-AbCdEfGh12345678", "Bearer%20AbCdEfGh12345678",
                                   "authorization%3A%20AbCdEfGh12345678"])
def test_the_credential_shape_rule_sees_through_percent_escapes(token: str) -> None:
    said = redact(f"echo {token} end")
    assert "AbCdEfGh" not in said and REDACTED in said and said.startswith("echo ") and said.endswith(" end")


def test_redact_leaves_plain_text_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SELF_HOSTED_API_KEY", KEY)
    text = "a plain sentence: 100% of 7 answers, 50%25 off, base64 aGVsbG8gd29ybGQ= and a/b+c=d"
    assert redact(text) == text


@pytest.fixture(scope="module")
def leaky(tiny, tiny_chat):
    """The local server behind :class:`~support.leaky_server.EchoKey`: every
    answer, error body, fingerprint and header echoes the caller's key in every form."""
    from support.leaky_server import EchoKey

    from cogtestbed.llm_adapters.servers.server import FaultInjector, create_app, serve_app

    faults = FaultInjector()
    with serve_app(EchoKey(create_app({"tiny-random": tiny, "tiny-random-chat": tiny_chat}, faults))) as root:
        yield f"{root}/v1", faults
        faults.pending.clear()


@pytest.mark.parametrize(("llm", "mode"), [("openai:tiny-random", "completions"), ("openai:tiny-random-chat", "chat")])
def test_a_server_echoing_the_key_in_every_form_gets_none_of_it_written(
        leaky, llm: str, mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A run retried through two 429s, a run failed by a 401, its --resume, and an export: every file they
    wrote (run directories, the response cache, parquet tables decoded, the transcript) and everything
    they printed hold no form of the key, though the server echoed it in every answer."""
    from cogtestbed.llm_adapters.servers.server import Fault

    url, faults = leaky
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    root = tmp_path / "w"
    base = ["run", "instrumental-learning", "--llm", llm, "--mode", mode, "--base-url",
            url, "--design", "visits_per_casino=2", "--cache", str(root / "cache.sqlite"), "--retry-for", "30"]
    said = []

    def cli(args: list[str]) -> int:
        code = run_cli(args)
        out = capsys.readouterr()
        said.append(out.out + out.err)
        return code

    faults.add(Fault("status", 429, retry_after=0), Fault("status", 429, retry_after=0))
    assert cli([*base, "-o", str(root / "retried")]) == 0, said[-1]
    assert said[-1].count("retry ") >= 2 and REDACTED in said[-1]
    faults.add(Fault("delay"), Fault("delay"), Fault("status", 401))
    assert cli([*base, "--seed", "7", "-o", str(root / "failed")]) == 2
    assert REDACTED in json.loads((root / "failed" / "run.json").read_text())["error"]
    assert cli([*base, "--seed", "7", "-o", str(root / "failed"), "--resume"]) == 0, said[-1]
    export = ["export", str(root / "failed" / "trials.parquet"), "--to", "psych201"]
    assert cli([*export, "-o", str(root / "transcript.jsonl")]) == 0, said[-1]
    texts = every_file_text(root)
    leaks = {path: found for path, text in texts.items() if (found := _leaks(text))}
    assert not leaks
    assert not _leaks("\n".join(said)), _leaks("\n".join(said))
    # the echoes reached every door, redacted: answers (tables, cache, transcript) and fingerprints
    for name in ("failed/trials.parquet (decoded)", "failed/calls.parquet (decoded)", "cache.sqlite",
                 "transcript.jsonl"):
        assert REDACTED in next(t for p, t in texts.items() if p.endswith(name)), name
    run = json.loads((root / "retried" / "run.json").read_text())
    assert run["endpoint"]["system_fingerprints"] and all(
        fp.startswith("fp_") and REDACTED in fp for fp in run["endpoint"]["system_fingerprints"])


# ------------------------------------------------------------------- 2. one column name, one column
@pytest.fixture(scope="module")
def small_table():
    import cogtestbed as ct

    return ct.simulate("instrumental-learning", "rw", subjects=2, seed=0)


def _twice(table, column: str):
    import pandas as pd

    return pd.concat([table, table[[column]]], axis=1)


@pytest.mark.parametrize("column", ["action", "subject", "reward"])
@pytest.mark.parametrize("call", ["fit", "fit-detected", "metrics", "export", "heldout_nll", "participant_nll"])
def test_every_table_door_refuses_two_columns_of_one_name_naming_it(small_table, column: str, call: str,
                                                                     tmp_path: Path) -> None:
    import cogtestbed as ct
    from cogtestbed.schema import TrialTableError

    table = _twice(small_table, column)
    calls = {"fit": lambda: ct.fit("instrumental-learning", table, "rw"),
             "fit-detected": lambda: ct.fit(None, table, "rw"),
             "metrics": lambda: ct.metrics("instrumental-learning", table),
             "export": lambda: ct.export(table, to="psych201", output=tmp_path / "t.jsonl"),
             "heldout_nll": lambda: ct.heldout_nll("instrumental-learning", table, model="rw", test=1),
             "participant_nll": lambda: ct.participant_nll(table)}
    with pytest.raises(TrialTableError) as err:
        calls[call]()
    said = str(err.value)
    assert f"the table has 2 columns named '{column}'; rename or drop the copies" in said and "\n" not in said


def test_the_schema_door_names_every_repeated_column() -> None:
    from cogtestbed.schema import TrialTableError, refuse_duplicated_column_names

    refuse_duplicated_column_names(["a", "b"])  # unique names pass
    with pytest.raises(TrialTableError, match=r"^t.parquet: the table has 3 columns named 'a', 2 columns named 'b';"):
        refuse_duplicated_column_names(["a", "b", "a", "b", "a"], "t.parquet")


@pytest.mark.parametrize("command", [["metrics", "instrumental-learning"], ["export", "--to", "psych201", "-o"]])
def test_a_parquet_file_with_two_columns_of_one_name_is_one_line_exit_2(
        small_table, command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrow = pa.Table.from_pandas(small_table, preserve_index=False)
    path = tmp_path / "dup.parquet"
    pq.write_table(arrow.append_column("action", arrow.column("action")), path)
    args = [*command, str(tmp_path / "t.jsonl")] if command[0] == "export" else command
    code = run_cli([args[0], str(path), *args[1:]] if command[0] == "export" else [*args, str(path)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert f"{path}: the table has 2 columns named 'action'" in " ".join(err.split())


# ------------------------------------------------------------------ 3. control characters in messages
def test_printable_escapes_what_a_terminal_would_act_on() -> None:
    from cogtestbed.errors import DataError, printable, quoted

    shown = printable("id \x1b[2J\x1b[31mred\x07\x08 \u202eevil\x9b")
    assert shown == "id \\x1b[2J\\x1b[31mred\\x07\\x08 \\u202eevil\\x9b"
    assert printable("tab\tand line\nstay") == "tab\tand line\nstay"  # one_line folds them
    assert quoted("p\x1b[2J\n7") == "'p\\x1b[2J\\n7'" and quoted(3) == "3"
    assert str(DataError("participant \x1b[2J7 is bad")) == "participant \\x1b[2J7 is bad"


def test_a_participant_id_with_ansi_escapes_never_reaches_the_terminal_raw(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from test_psych201 import _shahar_record, _write_jsonl

    rec = _shahar_record("\x1b[2J\x1b[31m7")
    rec["text"] = str(rec["text"]).replace("You choose <<M>>.", "You choose <<Q>>.", 1)
    path = _write_jsonl(tmp_path / "p.jsonl", [rec])
    code = run_cli(["metrics", "two-step", str(path), "--from", "psych201"])
    err = capsys.readouterr().err
    assert code == 2 and "\x1b" not in err and "participant \\x1b[2J\\x1b[31m7" in err, err


# ------------------------------------------------------------------------- 4. honest run records
@pytest.fixture(scope="module")
def billed_server(tiny):
    """The local server (whose usage has no ``completion_tokens_details``), with its fault injector and tally."""
    from cogtestbed.llm_adapters.servers.server import Billing, FaultInjector, serve

    faults, billing = FaultInjector(), Billing()
    with serve({"tiny-random": tiny}, faults, billing=billing) as url:
        yield url, faults, billing
        faults.pending.clear()


def test_run_json_totals_cover_every_invocation_and_unknown_hidden_tokens_are_null(
        billed_server, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A run failed by a 401, its --resume that finishes it, and a --resume that makes no call: run.json's
    token totals are the server's tally of all three, its hidden-token count null (the server never said)."""
    from cogtestbed.llm_adapters.servers.server import Fault

    url, faults, billing = billed_server
    prices = tmp_path / "prices.toml"
    prices.write_text('["openai:tiny-random"]\ninput = 1000.0\noutput = 2000.0\n')
    out = tmp_path / "run"
    args = ["run", "instrumental-learning", "--llm", "openai:tiny-random", "--mode", "completions", "--base-url",
            url, "--design", "visits_per_casino=2", "--cache", str(tmp_path / "c.sqlite"), "--prices", str(prices),
            "--seed", "3", "-o", str(out)]
    before = (billing.prompt_tokens, billing.completion_tokens)
    faults.add(Fault("delay"), Fault("delay"), Fault("delay"), Fault("status", 401))
    assert run_cli(args) == 2
    assert run_cli([*args, "--resume"]) == 0, capsys.readouterr().err
    first = json.loads((out / "run.json").read_text())["stats"]
    assert run_cli([*args, "--resume"]) == 0, capsys.readouterr().err
    stats = json.loads((out / "run.json").read_text())["stats"]
    spent = (billing.prompt_tokens - before[0], billing.completion_tokens - before[1])
    assert stats["new_calls"] == 0 and stats["new_prompt_tokens"] == 0 and stats["total_calls"] == first["total_calls"]
    assert (stats["prompt_tokens"], stats["completion_tokens"]) == spent and spent[0] > 0
    assert first["prompt_tokens"] == spent[0] > first["new_prompt_tokens"] > 0  # the first resume: not its own share
    assert stats["total_cost_usd"] == pytest.approx((spent[0] * 1000 + spent[1] * 2000) / 1e6, rel=1e-6)
    assert stats["reasoning_tokens"] is None and first["new_reasoning_tokens"] is None
    assert stats["new_reasoning_tokens"] == 0  # no call, no hidden token: known
    assert first["reasoning_unknown_calls"] == stats["reasoning_unknown_calls"] == stats["total_calls"]


def test_the_budget_says_unknown_hidden_tokens_are_null_and_reported_ones_are_counted() -> None:
    from cogtestbed.llm_adapters.middleware.limits import Budget, read_ledger

    lines: list[str] = []
    budget = Budget(ledger=lambda event: lines.append(json.dumps(event)))
    budget.settle(budget.reserve(10, 5), 10, 5, True, 3)
    assert budget.summary()["reasoning_tokens"] == 3
    budget.settle(budget.reserve(10, 5), 10, 5, True, None)  # the server omitted completion_tokens_details
    budget.settle(budget.reserve(10, 5), 10, 5, False, None)  # a failed call is no call
    summary = budget.summary()
    assert summary["reasoning_tokens"] is None and summary["reasoning_unknown_calls"] == 1
    assert summary["prompt_tokens"] == 20 and summary["completion_tokens"] == 10
    spend = read_ledger(lines)
    assert spend.reasoning() is None and spend.reasoning_tokens == 3 and spend.reasoning_unknown == 1


# ------------------------------------------------------------- 5. reasoning allowances within the row
@pytest.mark.parametrize(("llm", "budget", "bound", "row"), [
    ("openai:o3", "999999", "100,000", "openai:o3*"),
    ("openai:o3", "100000", "100,000", "openai:o3*"),
    ("anthropic:claude-opus-4-1-20250805", "32000", "32,000", "anthropic:claude-opus-4-1*"),
])
def test_a_thinking_budget_beyond_the_models_output_limit_is_refused_naming_the_bounds_source(
        llm: str, budget: str, bound: str, row: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = run_cli(["run", "instrumental-learning", "--llm", llm, "--thinking-budget", budget, "--dry-run",
                    "-o", str(tmp_path / "r")])
    captured = capsys.readouterr()
    err = " ".join(captured.err.split())
    assert code == 2 and captured.err.count("\n") == 1 and not captured.out, captured.err
    assert f"{llm} answers at most {bound} completion tokens per request" in err
    assert f"capability table row '{row}': max_output, from " in err and "https://" in err


def test_a_thinking_budget_within_the_row_is_booked_as_given(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    code = run_cli(["run", "instrumental-learning", "--llm", "openai:o3", "--thinking-budget", "20000", "--dry-run",
                    "-o", str(tmp_path / "r")])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["reasoning"]["completion_limit"]["hidden_allowance"] == 20000


def test_every_reasoning_row_of_the_capability_table_has_an_output_bound_with_its_source() -> None:
    from cogtestbed.llm_adapters.clients.capabilities import capability_table

    rows = [c for c in capability_table().values() if c.is_reasoning]
    assert len(rows) >= 10
    for cap in rows:
        assert cap.max_output is not None and cap.max_output >= 32000 and cap.max_output_source.count("https://") == 1
        assert cap.thinking_min is None or cap.thinking_min < cap.max_output


def test_sonnet_4_6_has_its_own_larger_output_bound_and_sonnet_4_5_keeps_64000() -> None:
    """Sonnet 4.6 allowed 128,000 output tokens but fell under claude-sonnet-4*'s 64,000 (re-check of 2026-11-27)."""
    from cogtestbed.llm_adapters.clients.capabilities import capability_of

    assert capability_of("anthropic:claude-sonnet-4-6").max_output == 128000
    assert capability_of("anthropic:claude-sonnet-4-5-20250929").max_output == 64000
    assert capability_of("anthropic:claude-opus-4-1").max_output == 32000


# ----------------------------------------------------------------- 6. type refusals in words, 400s
def test_a_table_with_nullable_columns_exports_and_reads_back_unchanged(small_table, tmp_path: Path) -> None:
    import pandas as pd

    import cogtestbed as ct
    from cogtestbed.api.core import read_table

    table = small_table.copy()
    half = len(table) // 2
    table["flag"] = pd.array([True, None] * half, dtype="boolean")
    table["count"] = pd.array([3, None] * half, dtype="Int64")
    ct.export(table, to="psych201", output=tmp_path / "t.jsonl")
    back, source = read_table("instrumental-learning", tmp_path / "t.jsonl", "psych201")
    assert source == "psych201" and str(back["flag"].dtype) == "boolean" and str(back["count"].dtype) == "Int64"
    assert back["flag"].equals(table["flag"]) and back["count"].equals(table["count"])


def test_a_value_that_does_not_fit_its_column_is_refused_naming_the_column_and_the_type(small_table,
                                                                                        tmp_path: Path) -> None:
    import pandas as pd

    import cogtestbed as ct
    from cogtestbed.api.core import read_table
    from cogtestbed.data.psych201 import Psych201Error

    table = small_table.copy()
    table["flag"] = pd.array([True, None] * (len(table) // 2), dtype="boolean")
    path = tmp_path / "t.jsonl"
    ct.export(table, to="psych201", output=path)
    path.write_text(path.read_text().replace('[\\"flag\\", \\"boolean\\"]', '[\\"flag\\", \\"int64\\"]'))
    with pytest.raises(Psych201Error) as err:
        read_table("instrumental-learning", path, "psych201")
    assert "t.jsonl: column 'flag' holds values that do not fit its type, integer (int64):" in str(err.value)


@pytest.mark.parametrize(("dtype", "words"), [("boolean", "nullable boolean (True/False/missing)"),
                                              ("Int64", "nullable integer (Int64)"), ("float64", "float (float64)"),
                                              ("bool", "boolean (True/False)"), ("object", "Python objects")])
def test_type_in_words(dtype: str, words: str) -> None:
    import pandas as pd

    from cogtestbed.schema import type_in_words

    assert type_in_words(dtype) == words == type_in_words(pd.api.types.pandas_dtype(dtype))


@pytest.mark.parametrize("body", [
    b'{"model": "tiny-random", "prompt": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",  # past the parser's recursion
    b'{"model": "tiny-random", "prompt": "x", "extra": ' + b"[" * 200 + b"]" * 200 + b"}",  # parsed, too deep
    b'{"model": "tiny-random", "prompt": ' + b"[" * 100_000 + b"}",  # deep and unclosed
])
@pytest.mark.parametrize("path", ["completions", "chat/completions", "messages"])
def test_a_deeply_nested_request_body_gets_400_not_500(billed_server, body: bytes, path: str) -> None:
    import httpx

    url = billed_server[0]
    resp = httpx.post(f"{url}/{path}", content=body, headers={"content-type": "application/json"})
    assert resp.status_code == 400, resp.text
    error = resp.json()["error"]
    assert error["type"] == "invalid_request_error" and ("deeper than 32 levels" in error["message"]
                                                         or "not valid JSON" in error["message"]), error


def test_json_depth_counts_without_recursion() -> None:
    from cogtestbed.llm_adapters.servers.checks import json_depth

    deep: list = []
    for _ in range(50_000):
        deep = [deep]
    assert json_depth({"a": [1, {"b": []}]}) == 4 and json_depth(3) == 0 and json_depth(deep) == 50_001


@pytest.mark.parametrize(("assumed", "refused"), [("2000", False), ("99999", False), ("500000", True),
                                                  ("1000:100000", True), ("1000:90000", False)])
def test_a_plans_assumed_reasoning_tokens_stay_within_the_row(assumed: str, refused: bool) -> None:
    from cogtestbed.errors import InputError
    from cogtestbed.planning.request import hidden_tokens

    if not refused:
        assert hidden_tokens(["openai:gpt-4o", "openai:o3"], None, assumed, None).kinds["all"].calls == 0
        return
    with pytest.raises(InputError, match=r"^`assume_reasoning_tokens` [\d,]+: openai:o3 answers at most 100,000 "
                                         r"completion tokens .*capability table row 'openai:o3\*': max_output"):
        hidden_tokens(["openai:gpt-4o", "openai:o3"], None, assumed, None)
