"""The two batch APIs behind :class:`~.protocol.Provider`: OpenAI's Batch API and Anthropic's Message
Batches, through their official SDKs; the backend registry names each backend's
(:attr:`~cogtestbed.llm_adapters.clients.backends.Backend.batches`)."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from cogtestbed.llm_adapters.clients.base import (
    BackendError,
    GenerateRequest,
)
from cogtestbed.llm_adapters.middleware.batch.protocol import (
    COMPLETION_WINDOW,
    END_STATES,
    BatchStatus,
    LineOutcome,
    Provider,
    count_of,
    json_lines,
    merge_outcome,
    retryable_status,
)

logger = logging.getLogger(__name__)


class OpenAIBatches(Provider):
    """OpenAI's Batch API: upload a JSONL file (purpose ``batch``), create the batch on the client's
    endpoint, poll ``GET /v1/batches/{id}``, read the output file (answered lines) and the error file
    (failed lines, and ``batch_expired`` / ``batch_cancelled`` ones)."""

    def connection_errors(self) -> tuple[type[BaseException], ...]:
        return (self.client._openai.APIConnectionError,)

    def line(self, custom_id: str, request: GenerateRequest) -> dict[str, Any]:
        return {"custom_id": custom_id, "method": "POST", "url": self.client.endpoint,
                "body": self.client.request_body(request)}

    async def submit(self, lines: list[dict[str, Any]], tag: str) -> str:
        sdk = self.client._client()
        data = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode()
        uploaded = await self.create_call(lambda: sdk.files.create(file=("requests.jsonl", data), purpose="batch"),
                                          "batch file upload", "POST /v1/files")
        batch = await self.create_call(lambda: sdk.batches.create(
            input_file_id=uploaded.id, endpoint=self.client.endpoint, completion_window=COMPLETION_WINDOW,
            metadata={"cogtestbed_tag": tag}), "batch create", "POST /v1/batches")
        return str(batch.id)

    async def find(self, tag: str) -> str | None:
        sdk = self.client._client()
        page = await self.call(lambda: sdk.batches.list(limit=100), "batch list")
        for batch in getattr(page, "data", []):
            if (batch.metadata or {}).get("cogtestbed_tag") == tag:
                return str(batch.id)
        return None

    async def status(self, batch_id: str) -> BatchStatus:
        sdk = self.client._client()
        batch = await self.call(lambda: sdk.batches.retrieve(batch_id), "batch poll")
        counts = batch.request_counts
        state = str(batch.status)
        reason = None
        if state == "failed":
            errors = getattr(batch, "errors", None)
            data = getattr(errors, "data", None) or []
            reason = "; ".join(f"{getattr(e, 'code', None)}: {getattr(e, 'message', None)}"
                               for e in data) or "no reason"
        return BatchStatus(state, state in END_STATES, count_of(getattr(counts, "total", None)),
                           count_of(getattr(counts, "completed", None)), count_of(getattr(counts, "failed", None)),
                           reason)

    async def _file(self, file_id: str | None) -> tuple[list[dict[str, Any]], list[str]]:
        if not file_id:
            return [], []
        sdk = self.client._client()
        content = await self.call(lambda: sdk.files.content(file_id), "batch results download")
        return json_lines(content.text, f"{self.client.spec}: batch file {file_id}")

    async def results(self, batch_id: str, requests: Mapping[str, GenerateRequest]) -> dict[str, LineOutcome]:
        sdk = self.client._client()
        batch = await self.call(lambda: sdk.batches.retrieve(batch_id), "batch retrieve for its files")
        out: dict[str, LineOutcome] = {}
        corrupt: list[str] = []
        for file_id in (batch.output_file_id, batch.error_file_id):
            items, bad = await self._file(file_id)
            corrupt += bad
            for item in items:
                request = requests.get(item["custom_id"])
                if request is not None:
                    merge_outcome(out, item["custom_id"], self._outcome(item, request))
        for cid in corrupt:
            if cid in requests:
                merge_outcome(out, cid, LineOutcome(retry="a corrupt result line", billed=True, unknown_usage=True))
        return out

    def _outcome(self, item: Mapping[str, Any], request: GenerateRequest) -> LineOutcome:
        error, response = item.get("error"), item.get("response")
        if isinstance(error, dict):  # not run: batch_expired, batch_cancelled, request_timeout
            return LineOutcome(retry=f"{error.get('code')}: {error.get('message')}")
        if not isinstance(response, dict) or not isinstance(response.get("status_code"), int):
            return LineOutcome(retry="a result line without a response", billed=True, unknown_usage=True)
        status, body = response["status_code"], response.get("body")
        if status != 200:
            message = body.get("error", {}).get("message") if isinstance(body, dict) else None
            line = f"HTTP {status}: {message or 'no message'}"
            return LineOutcome(retry=line, billed=True) if retryable_status(status) else LineOutcome(error=line)
        try:
            return LineOutcome(self.client.generation(self.client.parse_body(body), request), billed=True)
        except (ValueError, BackendError) as exc:
            return LineOutcome(retry=str(exc), billed=True, unknown_usage=True)


class AnthropicBatches(Provider):
    """Anthropic's Message Batches: create with the requests inline, poll until ``ended``, read the
    results (``succeeded`` / ``errored`` / ``canceled`` / ``expired`` per custom id)."""

    def connection_errors(self) -> tuple[type[BaseException], ...]:
        return (self.client._anthropic.APIConnectionError,)

    def line(self, custom_id: str, request: GenerateRequest) -> dict[str, Any]:
        return {"custom_id": custom_id, "params": self.client.request_body(request)}

    async def submit(self, lines: list[dict[str, Any]], tag: str) -> str:
        sdk = self.client._client()
        batch = await self.create_call(lambda: sdk.messages.batches.create(requests=lines), "batch create",
                                       "POST /v1/messages/batches")
        return str(batch.id)

    async def status(self, batch_id: str) -> BatchStatus:
        sdk = self.client._client()
        batch = await self.call(lambda: sdk.messages.batches.retrieve(batch_id), "batch poll")
        c = batch.request_counts
        parts = [count_of(getattr(c, k, None)) for k in ("processing", "succeeded", "errored", "canceled", "expired")]
        total = None if None in parts else sum(p for p in parts if p is not None)
        failed = None if None in parts[2:] else sum(p for p in parts[2:] if p is not None)
        state = str(batch.processing_status)
        return BatchStatus(state, state == "ended", total, parts[1], failed)

    async def results(self, batch_id: str, requests: Mapping[str, GenerateRequest]) -> dict[str, LineOutcome]:
        sdk = self.client._client()

        async def read() -> list[Any]:  # the SDK retrieves the batch for its results_url, then reads that
            self.count("batch retrieve for its results")
            items = []
            try:
                async for item in await sdk.messages.batches.results(batch_id):
                    items.append(item)
            except ValueError as exc:  # a line that is not JSON: the rest of the file cannot be read
                logger.warning("%s: batch %s: a result line is not JSON (%s); the requests without a result "
                               "are booked at their worst case and asked again", self.client.spec, batch_id, exc)
            return items

        out: dict[str, LineOutcome] = {}
        for item in await self.call(read, "batch results download"):
            request = requests.get(str(getattr(item, "custom_id", "")))
            if request is None:
                continue
            merge_outcome(out, item.custom_id, self._outcome(item.result, request))
        return out

    def _outcome(self, result: Any, request: GenerateRequest) -> LineOutcome:
        if result.type == "succeeded":
            try:
                return LineOutcome(self.client.generation(result.message, request), billed=True)
            except (AttributeError, TypeError, ValueError) as exc:
                return LineOutcome(retry=f"a result line that is not a message ({exc})", billed=True,
                                   unknown_usage=True)
        if result.type == "errored":
            err = result.error.error
            line = f"{err.type}: {err.message}"
            retry = err.type in ("api_error", "overloaded_error", "rate_limit_error", "timeout_error")
            return LineOutcome(retry=line, billed=True) if retry else LineOutcome(error=line)
        return LineOutcome(retry=f"{result.type} before it ran")  # canceled, expired: never run
