"""LLM clients: one contract, the backends behind it, and what is known of the hosted models.

* :mod:`.base` — the contract (:class:`~.base.LLMClient`: ``generate`` / ``score``) and its data types;
* :mod:`.backends` — the backend registry (``BACKEND:MODEL`` → a client; the entry-point group
  ``cogtestbed.backends``);
* the backends: :mod:`.openai_client` (OpenAI and compatible servers), :mod:`.anthropic_client`,
  :mod:`.hf` (local ``transformers`` models) with :mod:`.smollm2` (the built-in real model);
* what a hosted model accepts and costs: :mod:`.capabilities` (``capabilities.toml``), :mod:`.prices`
  (``prices.toml``), :mod:`.image_tokens`; whether a server's log-probabilities can be trusted:
  :mod:`.logprob_probe`.

Nothing here imports the run machinery (:mod:`cogtestbed.llm_adapters.runs`); this package's
``__init__`` imports nothing, so a module of it is loaded on use.
"""
