"""Batch mode (``cogtestbed run --batch``): a run's requests go through the provider's batch API at its
batch price — OpenAI's Batch API (a JSONL file uploaded to ``/v1/files``, ``/v1/batches`` created and
polled, the output and error files downloaded) or Anthropic's Message Batches
(``/v1/messages/batches`` created and polled, its results JSONL read).

**Packing.**  Where no prompt depends on an answer (the environment's ``answer_independent``), every
first ask of every subject and step is sent ahead in one batch (:meth:`~.client.BatchClient.fetch_ahead`, called
by :func:`~cogtestbed.llm_adapters.runs.runner.send_ahead`): one turnaround for the whole run.

**Waves.**  Otherwise subjects play as in any run (:func:`~cogtestbed.llm_adapters.runs.runner.play_subjects`, all of
them at once), but a new request does not travel alone: :class:`~.client.BatchClient` holds it until every
subject still playing waits for an answer (or, where some subject waits on something else, until no
new request has come for ``linger`` seconds), then submits all of them in one batch.  So wave k holds
step k of every session: experiments whose next prompt depends on the previous answer (bandits,
two-step) run their independent sessions in parallel waves, one batch per step.

**Results** are matched to requests by ``custom_id`` (never by order).  A line that failed for a reason
that may pass (a server error, a rate limit, a request the batch's window expired before running, a
cancelled one, a line missing from the results) is asked again in the next wave, at most
:data:`~.protocol.MAX_SUBMISSIONS` times in all; one the provider refused (a bad request) fails its subject's
call with the provider's message, as a refused HTTP request does.

**Every end.**  A batch may end ``completed``, ``expired``, ``cancelled`` or ``failed``, vanish (HTTP 404
after it was created), or return result lines that are corrupt, missing, without usage, doubled or also
in the error file.  Whatever the end, every answer is kept, every line is booked at what the provider
billed — its worst case, with one warning line, where that cannot be known (gone, corrupt, missing, no
usage) — and what has no answer is asked again; a ``custom_id`` answered twice differently is refused
(its call fails with one line naming the id; ``--resume`` asks it again).  :func:`~.pricing.batch_turnarounds`
counts the batches a run waits for, one after another.

**Budget.**  Every line is booked at its worst case (:meth:`Budget.reserve`) before its batch is
submitted, and settled with the usage its result reports (at the batch price: ``--batch`` prices the
run with the price table's ``batch_discount``).  A line the provider never ran (expired, cancelled)
bills nothing; a line that errored is a call with no tokens, as a failed HTTP request is; a re-asked
line is booked again.  The batch API's own requests (upload, create, polls, downloads, each retry) bill
nothing and are no calls, but each is counted against the budget's bound on service requests
(:meth:`Budget.service_request`, ``--max-service-requests``: beyond it the run stops, resumable) and
reported (``batch.http_requests`` and ``budget.service_requests`` in ``run.json``).  A wave whose batch
may exist when the run stops or fails (its ``submit`` line written) keeps its bookings open in the ledger
(charged at their worst case), since the provider runs and bills it anyway; ``--resume`` collects it and
settles them at the usage reported.

**Resuming after a kill.**  Before anything of a wave is sent, ``RUN_DIR/batches.jsonl`` gets a
``submit`` line with every request of the wave (its custom id, cache key, request, and the ledger id
of its booking); right after the provider accepts the batch, a ``created`` line with the batch id;
when every result is in the response cache, a ``done`` line.  ``--resume`` first finishes the waves
without a ``done`` line: it polls the recorded batch (or, killed between submission and the
``created`` line, finds it by the wave's tag in OpenAI's batch metadata; Anthropic's batches carry
no metadata, so there the wave is counted as never sent), stores its answers in the cache and
settles their bookings in the ledger with the usage reported.  The replay that follows finds those
answers in the cache: no request is lost and none is sent twice.
"""

