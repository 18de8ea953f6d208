"""TEST EMULATORS: stand-ins for hosted APIs and their failures, for tests and studies only.

Nothing of a run against a real provider uses them; they make the project's own server
(:mod:`cogtestbed.llm_adapters.servers.server`, a local model) behave like what the clients meet
in the wild, so that the clients' handling of it is tested offline on 127.0.0.1:

* :mod:`.faults` — HTTP faults (error statuses with ``Retry-After``, dropped connections, delays);
* :mod:`.reasoning` — a model acting as an OpenAI reasoning model or a Claude model with extended
  thinking (hidden tokens billed, refused fields answered with the provider's 400).

The batch APIs' emulator and a key-echoing server, which only tests and studies use, live outside the
wheel, in ``tests/support/``.
"""
