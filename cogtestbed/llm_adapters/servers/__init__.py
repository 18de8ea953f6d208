"""The project's local servers (servers apart from the clients).

* :mod:`.server` — a small OpenAI-compatible (and Anthropic-Messages-compatible) HTTP server for a
  local model (``python -m cogtestbed.llm_adapters.servers.server``), with its request checks
  (:mod:`.checks`), answers (:mod:`.responses`), admission control (:mod:`.admission`) and tally
  (:mod:`.billing`);
* :mod:`.llama_cpp` — llama.cpp's third-party server started as a subprocess;
* :mod:`.emulators` — **test emulators**, for tests and studies only: fault injection, a reasoning
  model, the providers' batch APIs.

Nothing here is imported by the clients or the run machinery; each module is imported on use.
"""
