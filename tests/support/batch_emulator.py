"""A local emulator of the two batch APIs, serving on 127.0.0.1, for tests and studies of batch mode.

It follows the providers' documented request and response shapes:

* **OpenAI** — ``POST /v1/files`` (multipart, ``purpose=batch``; a JSONL of ``{custom_id, method,
  url, body}`` lines), ``POST /v1/batches`` (``input_file_id``, ``endpoint``, ``completion_window``,
  ``metadata``), ``GET /v1/batches`` (list), ``GET /v1/batches/{id}`` (``status``: ``validating`` →
  ``in_progress`` → ``completed``, or ``expired``; ``request_counts``; ``output_file_id``,
  ``error_file_id``), ``GET /v1/files/{id}/content`` (output lines ``{id, custom_id, response:
  {status_code, request_id, body}, error: null}``; error-file lines with a non-200 ``response`` or an
  ``error`` ``{code: batch_expired, message}``).
* **Anthropic** — ``POST /v1/messages/batches`` (``requests: [{custom_id, params}]``), ``GET
  /v1/messages/batches/{id}`` (``processing_status``: ``in_progress`` → ``ended``; ``request_counts``
  of processing / succeeded / errored / canceled / expired; ``results_url`` once ended), ``GET
  /v1/messages/batches/{id}/results`` (lines ``{custom_id, result: {type: succeeded, message} |
  {type: errored, error: {type: error, error: {type, message}}} | {type: expired}}``).

Each request of a batch is answered by the project's own server
(:mod:`~cogtestbed.llm_adapters.servers.server`, in process) — a
local model behind ``/v1/chat/completions``, ``/v1/completions`` or ``/v1/messages`` — so usage is the
served model's own token count.  A batch advances only when it is polled: every poll runs a share of
its requests (``polls`` polls run them all), so a client sees its progress.  :class:`BatchFault`
makes a batch expire after some of its requests or fail chosen ones; :class:`Tally` counts every HTTP
request, every request run (by its body, to find duplicates) and the usage billed.

    PYTHONPATH=tests python -m support.batch_emulator --model tiny-random-chat --port 8001
"""

from __future__ import annotations

import argparse
import email.parser
import json
import time
import uuid
from collections import Counter, deque
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from cogtestbed.errors import InputError
from cogtestbed.llm_adapters.clients.hf import HFClient


@dataclass(frozen=True)
class BatchFault:
    """What goes wrong with one batch: ``expire_after`` — the batch's window ends after that many of
    its requests ran (the rest are ``expired``); ``errors`` — indices of requests that fail with
    ``status`` (500: a server error, retryable; 400: a refused request).  The ends the issue-48 fault
    server injects (OpenAI's API): ``fail`` — the batch ends ``failed`` with this message, running
    nothing; ``cancel_after`` — cancelled after that many requests ran (the rest ``batch_cancelled``);
    ``gone_after`` — after that many requests ran, every request for the batch answers 404; ``corrupt``
    — these requests run (and bill) but their output lines are not JSON (``corrupt_named``: the broken
    line still shows its custom id); ``no_usage`` — their output lines carry no ``usage``;
    ``also_error`` — answered and also listed in the error file (HTTP 500); ``conflict`` — answered
    twice in the output file, the second time differently; ``garbage_counts`` — ``request_counts`` that
    are not counts."""

    expire_after: int | None = None
    errors: tuple[int, ...] = ()
    status: int = 500
    fail: str | None = None
    cancel_after: int | None = None
    gone_after: int | None = None
    corrupt: tuple[int, ...] = ()
    corrupt_named: bool = False
    no_usage: tuple[int, ...] = ()
    also_error: tuple[int, ...] = ()
    conflict: tuple[int, ...] = ()
    garbage_counts: bool = False


@dataclass
class Tally:
    """What the emulator was asked and ran: HTTP requests by route, model requests run (by provider,
    and by canonical body: a body run twice is a duplicate), usage billed."""

    http: Counter[str] = field(default_factory=Counter)
    ran: Counter[str] = field(default_factory=Counter)
    bodies: Counter[str] = field(default_factory=Counter)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    expired: int = 0
    errored: int = 0
    #: Usage billed per custom id (prompt, completion tokens) of every request run.
    by_id: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def requests_run(self) -> int:
        return sum(self.ran.values())

    @property
    def duplicates(self) -> int:
        return sum(n - 1 for n in self.bodies.values() if n > 1)

    def as_json(self) -> dict[str, Any]:
        return {"http": dict(self.http), "requests_run": self.requests_run, "duplicates": self.duplicates,
                "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "expired": self.expired, "errored": self.errored}


def _multipart_file(body: bytes, content_type: str) -> tuple[bytes, dict[str, str]]:
    """The file part and the form fields of a ``multipart/form-data`` body."""
    message = email.parser.BytesParser().parsebytes(b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + body)
    data, fields = b"", {}
    parts: list[Any] = list(message.get_payload()) if message.is_multipart() else []
    for part in parts:
        name = part.get_param("name", header="content-disposition")
        payload: bytes = part.get_payload(decode=True) or b""
        if part.get_filename() is not None:
            data = payload
        elif name:
            fields[str(name)] = payload.decode()
    return data, fields


class BatchEmulator:
    """The emulator's state and its ASGI application (:meth:`app`)."""

    def __init__(self, models: Mapping[str, HFClient], polls: int = 2,
                 faults: list[BatchFault] | None = None, reasoning: Mapping[str, Any] | None = None) -> None:
        """``reasoning``: the served names that act as reasoning models
        (:mod:`~cogtestbed.llm_adapters.servers.emulators.reasoning`)."""
        from cogtestbed.llm_adapters.servers.billing import Billing
        from cogtestbed.llm_adapters.servers.server import create_app

        if polls < 1:
            raise InputError("polls must be at least 1")
        self.inner = create_app(models, billing=Billing(), reasoning=reasoning)
        self.models = list(models)
        self.polls = polls
        self.faults: deque[BatchFault] = deque(faults or [])
        self.tally = Tally()
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}

    # -- running requests ----------------------------------------------------------------------
    async def _run(self, path: str, body: Mapping[str, Any]) -> tuple[int, Any]:
        """One request through the local server: (status, JSON body)."""
        import httpx

        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=self.inner), base_url="http://inner") as c:
            resp = await c.post(path, json=body)
        try:
            payload = resp.json()
        except ValueError:
            payload = {"error": {"message": resp.text[:200], "type": "server_error"}}
        if resp.status_code == 200:
            usage = payload.get("usage") or {}
            self.tally.prompt_tokens += int(usage.get("prompt_tokens") or usage.get("input_tokens") or 0)
            self.tally.completion_tokens += int(usage.get("completion_tokens") or usage.get("output_tokens") or 0)
        return resp.status_code, payload

    def _ended_by_fault(self, batch: dict[str, Any], j: int) -> bool:
        """Whether the batch's fault ends it before request ``j`` runs (gone, or cancelled)."""
        fault, outcomes = batch["fault"], batch["outcomes"]
        ran = sum(1 for kind, _ in outcomes.values() if kind in ("ran", "error"))
        if fault.gone_after is not None and ran >= fault.gone_after:
            batch["gone"] = True
            return True
        if fault.cancel_after is not None and j >= fault.cancel_after:
            batch["cancelled"] = True
            for k in range(len(batch["lines"])):
                outcomes.setdefault(k, ("cancelled", None))
            return True
        return False

    async def _run_line(self, batch: dict[str, Any], j: int) -> None:
        """Run request ``j`` of the batch through the local server (billed, tallied by its custom id)."""
        line = batch["lines"][j]
        path, body = batch["route"](line)
        self.tally.ran[batch["provider"]] += 1
        self.tally.bodies[json.dumps(body, sort_keys=True)] += 1
        status, payload = await self._run(path, body)
        batch["outcomes"][j] = ("ran", (status, payload))
        usage = (payload.get("usage") or {}) if status == 200 and isinstance(payload, dict) else {}
        self.tally.by_id[str(line.get("custom_id"))] = (
            int(usage.get("prompt_tokens") or usage.get("input_tokens") or 0),
            int(usage.get("completion_tokens") or usage.get("output_tokens") or 0))

    async def _advance(self, batch: dict[str, Any]) -> None:
        """One poll's worth of work: the next share of the batch's requests run (or expire)."""
        batch["polls"] += 1
        lines, fault = batch["lines"], batch["fault"]
        if fault.fail is not None:  # failed validation: nothing runs
            batch["failed"] = True
            for j in range(len(lines)):
                batch["outcomes"][j] = ("not run", None)
            return
        share = -(-len(lines) // self.polls)
        todo = [j for j in range(len(lines)) if j not in batch["outcomes"]][:share]
        for j in todo:
            if self._ended_by_fault(batch, j):
                return
            if fault.expire_after is not None and j >= fault.expire_after:
                batch["outcomes"][j] = ("expired", None)
                self.tally.expired += 1
            elif j in fault.errors:
                batch["outcomes"][j] = ("error", fault.status)
                self.tally.errored += 1
            else:
                await self._run_line(batch, j)
        if fault.expire_after is not None and len(batch["outcomes"]) > fault.expire_after:
            for j in range(len(lines)):  # the window ended: whatever has not run expires now
                if j not in batch["outcomes"]:
                    batch["outcomes"][j] = ("expired", None)
                    self.tally.expired += 1

    # -- OpenAI --------------------------------------------------------------------------------
    def _openai_batch(self, b: dict[str, Any]) -> dict[str, Any]:
        outcomes = b["outcomes"]
        done = len(outcomes) == len(b["lines"])
        expired = any(kind == "expired" for kind, _ in outcomes.values())
        ok = sum(1 for kind, r in outcomes.values() if kind == "ran" and r[0] == 200)
        status = ("validating" if b["polls"] == 0 else "in_progress" if not done else "failed" if b.get("failed")
                  else "cancelled" if b.get("cancelled") else "expired" if expired else "completed")
        fault = b["fault"]
        counts: dict[str, Any] = {"total": len(b["lines"]), "completed": ok, "failed": len(outcomes) - ok}
        if fault.garbage_counts:
            counts = {"total": "many", "completed": -3, "failed": None}
        errors = None if not b.get("failed") else {"object": "list", "data": [
            {"code": "invalid_request", "message": fault.fail, "param": None, "line": 1}]}
        return {"id": b["id"], "object": "batch", "endpoint": b["endpoint"], "errors": errors,
                "input_file_id": b["input_file_id"], "completion_window": "24h", "status": status,
                "output_file_id": b.get("output_file_id"), "error_file_id": b.get("error_file_id"),
                "created_at": b["created_at"], "metadata": b["metadata"],
                "request_counts": counts}

    def _openai_files(self, b: dict[str, Any]) -> None:
        """Write the output and error files of an ended batch."""
        out: list[dict[str, Any]] = []
        err: list[dict[str, Any]] = []
        fault: BatchFault = b["fault"]
        raw_out: list[str] = []
        for j, (kind, result) in sorted(b["outcomes"].items()):
            cid = b["lines"][j]["custom_id"]
            line: dict[str, Any] = {"id": f"batch_req_{uuid.uuid4().hex}", "custom_id": cid, "response": None,
                                    "error": None}
            if kind == "not run":
                continue
            if kind in ("expired", "cancelled"):
                line["error"] = {"code": "batch_expired",
                                 "message": "This request could not be executed before the completion window expired."
                                 } if kind == "expired" else {"code": "batch_cancelled",
                                                              "message": "This request was cancelled."}
                err.append(line)
            elif kind == "error":
                line["response"] = {"status_code": result, "request_id": uuid.uuid4().hex,
                                    "body": {"error": {"message": "injected fault", "type": "server_error"
                                                       if result >= 500 else "invalid_request_error"}}}
                err.append(line)
            else:
                self._answered_lines(line, j, result, fault, out, err, raw_out)
        for name, lines, raw in (("output_file_id", out, raw_out), ("error_file_id", err, [])):
            if lines or raw:
                fid = f"file-{uuid.uuid4().hex}"
                text = "".join(json.dumps(x) + "\n" for x in lines) + "".join(r + "\n" for r in raw)
                self.files[fid] = text.encode()
                b[name] = fid

    @staticmethod
    def _answered_lines(line: dict[str, Any], j: int, result: Any, fault: BatchFault, out: list[dict[str, Any]],
                        err: list[dict[str, Any]], raw_out: list[str]) -> None:
        """The output/error-file lines of request ``j`` that ran (its fault's corruption applied)."""
        cid = line["custom_id"]
        status, body = result
        if j in fault.no_usage and isinstance(body, dict):
            body = {k: v for k, v in body.items() if k != "usage"}
        line["response"] = {"status_code": status, "request_id": uuid.uuid4().hex, "body": body}
        if status != 200:
            err.append(line)
            return
        if j in fault.corrupt:
            raw_out.append((f'{{"custom_id": "{cid}", "response": {{"status_c' if fault.corrupt_named
                            else '{"id": "batch_req_x", "respo') + "\x00garbage")
            return
        out.append(line)
        if j in fault.conflict:
            other = json.loads(json.dumps(line))
            for choice in other["response"]["body"].get("choices", []):
                if isinstance(choice.get("message"), dict):
                    choice["message"]["content"] = "a different answer"
                else:
                    choice["text"] = "a different answer"
            out.append(other)
        if j in fault.also_error:
            err.append({**line, "id": f"batch_req_{uuid.uuid4().hex}", "response": {
                "status_code": 500, "request_id": uuid.uuid4().hex,
                "body": {"error": {"message": "injected fault", "type": "server_error"}}}})

    # -- Anthropic -----------------------------------------------------------------------------
    def _anthropic_batch(self, b: dict[str, Any], base: str) -> dict[str, Any]:
        outcomes = b["outcomes"]
        ended = len(outcomes) == len(b["lines"])
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        for kind, result in outcomes.values():
            counts["expired" if kind == "expired" else "succeeded" if kind == "ran" and result[0] == 200
                   else "errored"] += 1
        counts["processing"] = len(b["lines"]) - len(outcomes)
        if not ended:  # counts settle when the batch ends (as the API documents)
            counts = {**dict.fromkeys(counts, 0), "processing": len(b["lines"])}
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(b["created_at"]))
        return {"id": b["id"], "type": "message_batch", "processing_status": "ended" if ended else "in_progress",
                "request_counts": counts, "created_at": stamp, "expires_at": stamp,
                "ended_at": stamp if ended else None, "cancel_initiated_at": None, "archived_at": None,
                "results_url": f"{base}v1/messages/batches/{b['id']}/results" if ended else None}

    def _anthropic_result(self, kind: str, result: Any) -> dict[str, Any]:
        if kind == "expired":
            return {"type": "expired"}
        if kind in ("cancelled", "not run"):
            return {"type": "canceled"}
        status, body = (result, None) if kind == "error" else result
        if status == 200:
            return {"type": "succeeded", "message": body}
        kind_of = "api_error" if status >= 500 else "invalid_request_error"
        message = body.get("error", {}).get("message", "injected fault") if isinstance(body, dict) else "injected fault"
        return {"type": "errored", "error": {"type": "error", "error": {"type": kind_of, "message": message}}}

    # -- the application -----------------------------------------------------------------------
    def app(self) -> Any:  # noqa: C901 - one route table
        from starlette.applications import Starlette
        from starlette.requests import Request
        from starlette.responses import JSONResponse, Response
        from starlette.routing import Route

        def error(status: int, message: str) -> JSONResponse:
            return JSONResponse({"error": {"message": message, "type": "invalid_request_error"}}, status_code=status)

        def batch_of(request: Request, kind: str) -> dict[str, Any] | None:
            b = self.batches.get(request.path_params["batch_id"])
            return b if b is not None and b["provider"] == kind else None

        async def upload(request: Request) -> JSONResponse:
            self.tally.http["files.create"] += 1
            data, fields = _multipart_file(await request.body(), request.headers.get("content-type", ""))
            if fields.get("purpose") != "batch" or not data:
                return error(400, "a batch input file needs purpose=batch and a file")
            fid = f"file-{uuid.uuid4().hex}"
            self.files[fid] = data
            return JSONResponse({"id": fid, "object": "file", "bytes": len(data), "created_at": int(time.time()),
                                 "filename": "requests.jsonl", "purpose": "batch", "status": "processed"})

        async def create(request: Request) -> JSONResponse:
            self.tally.http["batches.create"] += 1
            body = await request.json()
            data = self.files.get(str(body.get("input_file_id")))
            if data is None:
                return error(404, f"no file {body.get('input_file_id')!r}")
            if body.get("completion_window") != "24h" or body.get("endpoint") not in (
                    "/v1/chat/completions", "/v1/completions"):
                return error(400, "endpoint must be /v1/chat/completions or /v1/completions, completion_window 24h")
            lines = [json.loads(x) for x in data.decode().splitlines() if x.strip()]
            ids = [x.get("custom_id") for x in lines]
            if len(set(ids)) != len(ids) or any(x.get("url") != body["endpoint"] for x in lines):
                return error(400, "custom_id must be unique and every line's url the batch's endpoint")
            bid = f"batch_{uuid.uuid4().hex}"
            self.batches[bid] = {"id": bid, "provider": "openai", "endpoint": body["endpoint"], "lines": lines,
                                 "input_file_id": body["input_file_id"], "metadata": body.get("metadata") or {},
                                 "created_at": int(time.time()), "polls": 0, "outcomes": {},
                                 "fault": self.faults.popleft() if self.faults else BatchFault(),
                                 "route": lambda line: (line["url"], line["body"])}
            return JSONResponse(self._openai_batch(self.batches[bid]))

        async def listing(request: Request) -> JSONResponse:
            self.tally.http["batches.list"] += 1
            data = [self._openai_batch(b) for b in self.batches.values() if b["provider"] == "openai"][::-1]
            return JSONResponse({"object": "list", "data": data, "has_more": False,
                                 "first_id": data[0]["id"] if data else None,
                                 "last_id": data[-1]["id"] if data else None})

        async def retrieve(request: Request) -> JSONResponse:
            self.tally.http["batches.retrieve"] += 1
            b = batch_of(request, "openai")
            if b is None or b.get("gone"):
                return error(404, "no such batch")
            if len(b["outcomes"]) < len(b["lines"]):
                if b["polls"] > 0:
                    await self._advance(b)
                else:
                    b["polls"] += 1
                if b.get("gone"):
                    return error(404, "no such batch")
                if len(b["outcomes"]) == len(b["lines"]):
                    self._openai_files(b)
            return JSONResponse(self._openai_batch(b))

        async def content(request: Request) -> Response:
            self.tally.http["files.content"] += 1
            data = self.files.get(request.path_params["file_id"])
            if data is None:
                return error(404, "no such file")
            return Response(data, media_type="application/jsonl")

        async def a_create(request: Request) -> JSONResponse:
            self.tally.http["messages.batches.create"] += 1
            body = await request.json()
            lines = body.get("requests")
            if not isinstance(lines, list) or not lines:
                return error(400, "requests: a non-empty list of {custom_id, params}")
            ids = [x.get("custom_id") for x in lines]
            if len(set(ids)) != len(ids):
                return error(400, "custom_id must be unique within a batch")
            bid = f"msgbatch_{uuid.uuid4().hex}"
            self.batches[bid] = {"id": bid, "provider": "anthropic", "lines": lines, "created_at": int(time.time()),
                                 "polls": 0, "outcomes": {},
                                 "fault": self.faults.popleft() if self.faults else BatchFault(),
                                 "route": lambda line: ("/v1/messages", line["params"])}
            return JSONResponse(self._anthropic_batch(self.batches[bid], str(request.base_url)))

        async def a_retrieve(request: Request) -> JSONResponse:
            self.tally.http["messages.batches.retrieve"] += 1
            b = batch_of(request, "anthropic")
            if b is None:
                return error(404, "no such batch")
            if len(b["outcomes"]) < len(b["lines"]):
                await self._advance(b)
            return JSONResponse(self._anthropic_batch(b, str(request.base_url)))

        async def a_results(request: Request) -> Response:
            self.tally.http["messages.batches.results"] += 1
            b = batch_of(request, "anthropic")
            if b is None or len(b["outcomes"]) < len(b["lines"]):
                return error(404 if b is None else 400, "no results: the batch has not ended")
            out = "".join(json.dumps({"custom_id": b["lines"][j]["custom_id"],
                                      "result": self._anthropic_result(*b["outcomes"][j])}) + "\n"
                          for j in sorted(b["outcomes"]))
            return Response(out.encode(), media_type="application/binary")

        return Starlette(routes=[
            Route("/v1/files", upload, methods=["POST"]),
            Route("/v1/files/{file_id}/content", content, methods=["GET"]),
            Route("/v1/batches", create, methods=["POST"]),
            Route("/v1/batches", listing, methods=["GET"]),
            Route("/v1/batches/{batch_id}", retrieve, methods=["GET"]),
            Route("/v1/models", lambda r: JSONResponse({"object": "list", "data": [
                {"id": name, "object": "model", "created": 0, "owned_by": "cogtestbed"} for name in self.models]}),
                  methods=["GET"]),
            Route("/v1/messages/batches", a_create, methods=["POST"]),
            Route("/v1/messages/batches/{batch_id}", a_retrieve, methods=["GET"]),
            Route("/v1/messages/batches/{batch_id}/results", a_results, methods=["GET"]),
        ])


@contextmanager
def serve_batches(emulator: BatchEmulator, host: str = "127.0.0.1") -> Iterator[str]:
    """Run ``emulator`` on a free port of ``host`` in a thread; yield its root URL (Anthropic's base
    URL; OpenAI's is it plus ``/v1``)."""
    from cogtestbed.llm_adapters.servers.server import serve_app

    with serve_app(emulator.app(), host) as root:
        yield root


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--model", action="append", required=True,
                        help="tiny-random, tiny-random-chat, ... (repeatable)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument("--polls", type=int, default=2, help="polls a batch takes to end")
    parser.add_argument("--tally", default=None, help="write the tally (JSON) to this file at every batch poll")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    """``PYTHONPATH=tests python -m support.batch_emulator --model NAME [--port N] [--polls K]``."""
    import uvicorn

    args = parse_args(argv)
    emulator = BatchEmulator({name: HFClient.from_pretrained(name) for name in args.model}, polls=args.polls)
    app = emulator.app()
    if args.tally:
        app = _TallyWriter(app, emulator, args.tally)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")


class _TallyWriter:
    """ASGI middleware writing the emulator's tally to a file after every request."""

    def __init__(self, app: Any, emulator: BatchEmulator, path: str) -> None:
        self.app, self.emulator, self.path = app, emulator, path

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.app(scope, receive, send)
        if scope["type"] == "http":
            from pathlib import Path

            tmp = Path(self.path + ".tmp")
            tmp.write_text(json.dumps(self.emulator.tally.as_json()))
            tmp.replace(self.path)


if __name__ == "__main__":
    main()
