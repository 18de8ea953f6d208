"""Local Hugging Face ``transformers`` models, and ``hf:tiny-random``, a smoke-test model.

* Instruct models (a tokenizer with a chat template) get their chat template; base models get the
  raw prompt (seed 004 §5, points 1 and 4).  ``chat=`` overrides the choice.
* :meth:`HFClient.ascore` is exact: one teacher-forced forward pass per continuation over
  ``context + continuation``, log-softmax in float32, the continuation's token log-probabilities
  summed.  The continuation's tokens are found by tokenising ``context + continuation`` jointly
  and removing the context's tokens (seed 004 §5, "space tokens"), so ``" 1"`` after
  ``"equal to"`` is scored as whatever tokens the tokenizer really produces (``["Ġ1"]`` or
  ``["Ġ", "1"]``).  Where the tokenizer merges across the boundary (the joint tokens do not start
  with the context's tokens) the continuation is tokenised on its own and appended, and the
  result records ``boundary_merge``.  The full next-token distribution is available, so
  ``mass_outside`` is reported when the continuations are disjoint.
* CPU by default; the GPU when ``torch.cuda.is_available()`` (or ``device=``).

``hf:tiny-random`` is a randomly initialised 2-layer Llama with a 320-token byte-level BPE
tokenizer trained in code on a fixed sentence list: no download, deterministic, a few hundred
kilobytes of weights.  It answers nonsense — it exists to exercise the whole pipeline (prompts,
parsing, invalid answers, caching, scoring, the HTTP server) in seconds.  ``hf:tiny-random-chat``
is the same model with a minimal chat template, for the chat path.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections.abc import Sequence
from typing import Any

from cogtestbed.llm_adapters.base import (
    BackendUnavailable,
    ContinuationScore,
    GenerateRequest,
    Generation,
    LLMClient,
    Prompt,
    ScoreResult,
    TokenLogprob,
    apply_stop,
    finish_score,
)

TINY_RANDOM = "tiny-random"
#: Continuations scored in one batched forward pass (see ``HFClient._batched_token_logprobs``).
SCORE_BATCH = 64
TINY_RANDOM_CHAT = "tiny-random-chat"
#: The minimal chat template of ``hf:tiny-random-chat``.
TINY_CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
_TINY_CORPUS = (
    "You are going to visit four different casinos (named 1, 2, 3 and 4) 24 times each. "
    "Each casino owns two slot machines which all return either 1 or 0 dollars. "
    "- Machine A in Casino 1 delivered 1.0 dollars. - Machine B in Casino 2 delivered 0.0 dollars. "
    "Q: Which machine do you choose between Machine C and Machine D? A: Machine F. "
    "Option 1 or Option 2? I prefer option 1. The probability is equal to 0.5 yes no heads tails",
)


def _torch() -> Any:
    try:
        import torch
        import transformers  # noqa: F401
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise BackendUnavailable(
            "the hf backend needs torch and transformers: pip install 'cogtestbed[hf]'"
        ) from exc
    return torch


def build_tiny_random(chat: bool = False, seed: int = 0) -> tuple[Any, Any]:
    """(model, tokenizer) of the smoke-test model, built locally from a config (no download)."""
    torch = _torch()
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    raw = Tokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=320, special_tokens=["<s>", "</s>"], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    raw.train_from_iterator(list(_TINY_CORPUS) * 8, trainer)  # deterministic for a fixed corpus
    raw.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 0)])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=raw, bos_token="<s>", eos_token="</s>",
                                        pad_token="</s>")
    if chat:
        tokenizer.chat_template = TINY_CHAT_TEMPLATE
    config = LlamaConfig(
        vocab_size=raw.get_vocab_size(), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=65536,
        bos_token_id=0, eos_token_id=1, pad_token_id=1, tie_word_embeddings=False,
        # A wide init gives peaked next-token distributions (a near-uniform model would make
        # score tests and greedy decoding uninformative).
        initializer_range=0.5,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    # float64: the smoke-test model's scores then agree to ~1e-12 whatever the batching or KV
    # caching of the forward pass (float32 paths differ by ~1e-6 with its wide init), so exact
    # scoring can be checked against the logits to 1e-6.
    model = model.to(torch.float64)
    model.eval()
    return model, tokenizer


class HFClient(LLMClient):
    """A local ``transformers`` causal LM (see module docstring)."""

    backend = "hf"
    can_score = True

    def __init__(self, model: Any, tokenizer: Any, name: str, *, chat: bool | None = None,
                 device: str | None = None, fingerprint: str | None = None) -> None:
        torch = _torch()
        self.torch = torch
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.hf_model = model.to(self.device)
        self.hf_model.eval()
        self.tokenizer = tokenizer
        self.model = name
        has_template = getattr(tokenizer, "chat_template", None) is not None
        if chat and not has_template:
            raise ValueError(f"{name}: chat=True but the tokenizer has no chat template")
        self.chat = has_template if chat is None else chat
        self._fingerprint = fingerprint
        # One forward pass at a time: generate() is not safe to interleave on one model.
        self._lock = threading.Lock()

    # -- construction --------------------------------------------------------------------
    @classmethod
    def tiny_random(cls, chat: bool = False, device: str | None = None) -> HFClient:
        model, tokenizer = build_tiny_random(chat=chat)
        return cls(model, tokenizer, TINY_RANDOM_CHAT if chat else TINY_RANDOM, chat=chat,
                   device=device)

    @classmethod
    def from_pretrained(cls, name: str, *, chat: bool | None = None, device: str | None = None,
                        dtype: str = "auto") -> HFClient:
        """Load a hub id or local directory (``hf:tiny-random[-chat]`` are built instead)."""
        if name in (TINY_RANDOM, TINY_RANDOM_CHAT):
            return cls.tiny_random(chat=(name == TINY_RANDOM_CHAT) if chat is None else chat,
                                   device=device)
        torch = _torch()
        from transformers import AutoModelForCausalLM, AutoTokenizer

        device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        # bf16 on the GPU as CogBench ran its HF models; float32 on the CPU (bf16 matmuls are slow).
        torch_dtype: Any = (torch.bfloat16 if device.startswith("cuda") else torch.float32) \
            if dtype == "auto" else getattr(torch, dtype)
        tokenizer = AutoTokenizer.from_pretrained(name)
        model = AutoModelForCausalLM.from_pretrained(name, dtype=torch_dtype)
        revision = getattr(model.config, "_commit_hash", None) or ""
        return cls(model, tokenizer, name, chat=chat, device=device,
                   fingerprint=f"{revision}:{torch_dtype}")

    @property
    def fingerprint(self) -> str:
        if self._fingerprint is None:
            h = hashlib.sha256(self.tokenizer.backend_tokenizer.to_str().encode())
            for key, tensor in sorted(self.hf_model.state_dict().items()):
                h.update(key.encode())
                h.update(tensor.detach().float().cpu().numpy().tobytes())
            self._fingerprint = h.hexdigest()[:16]
        return self._fingerprint

    # -- tokenisation ----------------------------------------------------------------------
    def render(self, prompt: Prompt) -> str:
        """The exact text fed to the model: the chat template for chat prompts, else raw."""
        if isinstance(prompt, str) and not self.chat:
            return prompt
        if not self.chat:
            raise ValueError(f"{self.model} is a completion model (no chat template); send raw text")
        messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else list(prompt)
        return str(self.tokenizer.apply_chat_template(messages, add_generation_prompt=True,
                                                      tokenize=False))

    def encode(self, text: str, *, rendered_chat: bool = False) -> list[int]:
        """Token ids; a chat-templated text already holds its special tokens."""
        return list(self.tokenizer(text, add_special_tokens=not rendered_chat)["input_ids"])

    def count_tokens(self, text: str) -> tuple[int, bool]:
        return len(self.encode(text)), True

    # -- generate --------------------------------------------------------------------------
    async def agenerate(self, request: GenerateRequest, *, raw: bool = False) -> Generation:
        """Generate; ``raw=True`` feeds a text prompt as is even to a chat model (completions)."""
        return await asyncio.to_thread(self._generate, request, raw)

    def _generate(self, request: GenerateRequest, raw: bool = False) -> Generation:
        torch = self.torch
        if raw and not isinstance(request.prompt, str):
            raise ValueError("a raw completion takes a text prompt")
        text = request.prompt if raw else self.render(request.prompt)
        ids = self.encode(str(text), rendered_chat=self.chat and not raw)
        input_ids = torch.tensor([ids], device=self.device)
        sample = request.temperature > 0
        kwargs: dict[str, Any] = dict(
            max_new_tokens=request.max_tokens, do_sample=sample, return_dict_in_generate=True,
            output_logits=True, pad_token_id=self.tokenizer.pad_token_id
            if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id,
        )
        if sample:  # plain softmax sampling at the requested temperature (no top-k/top-p)
            kwargs.update(temperature=request.temperature, top_k=0, top_p=1.0)
        with self._lock, torch.no_grad(), torch.random.fork_rng(devices=[]):
            torch.manual_seed(request.seed if request.seed is not None else 0)
            out = self.hf_model.generate(input_ids=input_ids,
                                         attention_mask=torch.ones_like(input_ids), **kwargs)
        new = out.sequences[0, len(ids):].tolist()
        eos = self.tokenizer.eos_token_id
        finish = "length"
        if eos in new:
            new = new[: new.index(eos)]
            finish = "stop"
        full = self.tokenizer.decode(new, skip_special_tokens=True)
        textout, stopped = apply_stop(full, request.stop)
        n_used = len(new)
        if stopped:
            finish = "stop"
            # Tokens up to (and including) the one where the stop string begins.
            n_used = next(k for k in range(1, len(new) + 1)
                          if len(self.tokenizer.decode(new[:k], skip_special_tokens=True)) > len(textout))
        logprobs = None
        if request.top_logprobs is not None:
            logprobs = []
            for k, tok in enumerate(new[:n_used]):
                lp = torch.log_softmax(out.logits[k][0].float(), dim=-1)
                top = torch.topk(lp, min(request.top_logprobs, lp.shape[-1]))
                logprobs.append(TokenLogprob(
                    token=self.tokenizer.decode([tok]), logprob=float(lp[tok]),
                    top={self.tokenizer.decode([int(i)]): float(v)
                         for v, i in zip(top.values.tolist(), top.indices.tolist(), strict=True)},
                ))
        return Generation(text=textout, prompt_tokens=len(ids), completion_tokens=n_used,
                          finish_reason=finish, logprobs=logprobs)

    def prompt_logprobs(self, text: str) -> list[tuple[str, int, float | None]]:
        """(token text, character offset, log P(token | earlier tokens)) for every token of a
        raw ``text``; the first token has no log-probability (what ``echo=True`` returns)."""
        torch = self.torch
        enc = self.tokenizer(text, return_offsets_mapping=True)
        ids, offsets = list(enc["input_ids"]), list(enc["offset_mapping"])
        with self._lock, torch.no_grad():
            logits = self.hf_model(torch.tensor([ids], device=self.device)).logits[0]
        lp = torch.log_softmax(logits.float(), dim=-1)
        out: list[tuple[str, int, float | None]] = []
        for k, (tok, (start, end)) in enumerate(zip(ids, offsets, strict=True)):
            out.append((text[start:end], int(start), None if k == 0 else float(lp[k - 1, tok])))
        return out

    # -- score -----------------------------------------------------------------------------
    def _batched_token_logprobs(self, ctx_ids: list[int], conts: list[list[int]]) -> list[list[float]]:
        """log P of every continuation token, teacher-forced: one forward pass of the context
        (its KV cache kept), then all continuations at once on copies of that cache (right-padded;
        padding after a sequence's last real token cannot change its logits under causal
        attention).  Chunks of :data:`SCORE_BATCH` continuations bound the memory."""
        import copy

        torch = self.torch
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        out: list[list[float]] = []
        with self._lock, torch.no_grad():
            ctx = self.hf_model(torch.tensor([ctx_ids], device=self.device), use_cache=True)
            first = torch.log_softmax(ctx.logits[0, -1].float(), dim=-1)
            for lo in range(0, len(conts), SCORE_BATCH):
                chunk = conts[lo:lo + SCORE_BATCH]
                longest = max(len(c) for c in chunk)
                rest: Any = None
                if longest > 1:
                    cache = copy.deepcopy(ctx.past_key_values)
                    cache.batch_repeat_interleave(len(chunk))
                    inp = torch.tensor([c[:-1] + [pad] * (longest - len(c)) for c in chunk], device=self.device)
                    logits = self.hf_model(input_ids=inp, past_key_values=cache, use_cache=True).logits
                    rest = torch.log_softmax(logits.float(), dim=-1)
                for i, c in enumerate(chunk):
                    lps = [float(first[c[0]])]
                    lps += [float(rest[i, j - 1, c[j]]) for j in range(1, len(c))]
                    out.append(lps)
        return out

    async def ascore(self, context: Prompt, continuations: Sequence[str], raw: bool = False) -> ScoreResult:
        return await asyncio.to_thread(self.score_sync, context, continuations, raw)

    def continuation_ids(self, context_ids: list[int], text: str, continuation: str,
                         rendered_chat: bool) -> tuple[list[int], bool]:
        """Tokens of ``continuation`` after the context; True when the boundary merged."""
        joint = self.encode(text + continuation, rendered_chat=rendered_chat)
        if joint[: len(context_ids)] == context_ids:
            return joint[len(context_ids):], False
        return list(self.tokenizer(continuation, add_special_tokens=False)["input_ids"]), True

    def score_sync(self, context: Prompt, continuations: Sequence[str], raw: bool = False) -> ScoreResult:
        """Exact teacher-forced log-probabilities (see module docstring); ``raw``: a text context
        is scored as is, even on a chat model."""
        if not continuations:
            raise ValueError("score needs at least one continuation")
        if raw and not isinstance(context, str):
            raise ValueError("a raw score takes a text context")
        rendered_chat = not isinstance(context, str) or (self.chat and not raw)
        text = self.render(context) if rendered_chat else str(context)
        ctx_ids = self.encode(text, rendered_chat=rendered_chat)
        if not ctx_ids:
            raise ValueError("the context has no tokens (and the tokenizer adds no BOS): nothing "
                             "to condition the first continuation token on")
        conts, merged = [], []
        for cont in continuations:
            cont_ids, was_merged = self.continuation_ids(ctx_ids, text, cont, rendered_chat)
            if not cont_ids:
                raise ValueError(f"continuation {cont!r} has no tokens")
            conts.append(cont_ids)
            merged.append(was_merged)
        token_lps = self._batched_token_logprobs(ctx_ids, conts)
        scores = [ContinuationScore(cont, float(sum(lps)), [self.tokenizer.decode([t]) for t in ids], lps, m)
                  for cont, ids, lps, m in zip(continuations, conts, token_lps, merged, strict=True)]
        all_ids = conts
        return finish_score(text, scores, all_ids, full_distribution=True)
