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
    from cogtestbed.llm_adapters.servers.emulators.leaky import echo_forms

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
def leaky(tiny):
    """The local server behind :class:`~cogtestbed.llm_adapters.servers.emulators.leaky.EchoKey`: every
    answer, error body, fingerprint and header echoes the caller's key in every form."""
    from cogtestbed.llm_adapters.servers.emulators.leaky import EchoKey
    from cogtestbed.llm_adapters.servers.server import FaultInjector, create_app, serve_app

    faults = FaultInjector()
    with serve_app(EchoKey(create_app({"tiny-random": tiny}, faults))) as root:
        yield f"{root}/v1", faults
        faults.pending.clear()


def test_a_server_echoing_the_key_in_every_form_gets_none_of_it_written(
        leaky, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A run retried through two 429s, a run failed by a 401, its --resume, and an export: every file they
    wrote (run directories, the response cache, parquet tables decoded, the transcript) and everything
    they printed hold no form of the key, though the server echoed it in every answer."""
    from cogtestbed.llm_adapters.servers.server import Fault

    url, faults = leaky
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    root = tmp_path / "w"
    base = ["run", "instrumental-learning", "--llm", "openai:tiny-random", "--mode", "completions", "--base-url",
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
