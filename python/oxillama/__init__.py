"""oxillama from Python: a high-level API shaped like llama-cpp-python's (Llama, create_completion,
create_chat_completion, tokenize, detokenize, embed) over the C extension oxillama._oxillama, which
binds the library's public C API (include/oxillama.h).

    from oxillama import Llama
    llm = Llama("models/stories260K.gguf", n_ctx=256)
    out = llm("Once upon a time", max_tokens=32, temperature=0)
    print(out["choices"][0]["text"])
"""
import json
import math
import os
import time
import uuid

from ._oxillama import LIBRARY_VERSION, Context, Detok, Model, OxlError, Sampler, SEED_RANDOM, json_schema_to_grammar

__version__ = LIBRARY_VERSION  # the library's oxl_version(): the package is built with it

__all__ = ["Llama", "LlamaGrammar", "__version__", "OxlError", "Model", "Context", "Sampler", "Detok",
           "LLAMA_DEFAULT_SEED", "json_schema_to_grammar"]

LLAMA_DEFAULT_SEED = SEED_RANDOM  # llama-cpp-python's name: a seed drawn from the clock

# llama-cpp-python's chat_format names that the library's built-in formats render (the library's own
# names, e.g. "chatml", "llama3", "mistral-v7", are accepted as they are).
_CHAT_FORMAT_ALIASES = {
    "llama-2": "llama2",
    "llama-3": "llama3",
    "mistral-instruct": "mistral-v1",
    "openchat": "openchat",
    "zephyr": "zephyr",
    "vicuna": "vicuna",
    "gemma": "gemma",
    "chatglm3": "chatglm3",
    "phi-3": "phi3",
}
# The library's built-in chat formats (llama.cpp's llm_chat_template names).
_BUILTIN_CHAT_FORMATS = frozenset(
    "chatml llama2 llama2-sys llama2-sys-bos llama2-sys-strip mistral-v1 mistral-v3 mistral-v3-tekken mistral-v7 "
    "mistral-v7-tekken phi3 phi4 falcon3 zephyr monarch gemma orion openchat vicuna vicuna-orca deepseek deepseek2 "
    "deepseek3 deepseek-ocr command-r llama3 chatglm3 chatglm4 glmedge minicpm exaone3 exaone4 exaone-moe rwkv-world "
    "granite granite-4.0 granite-4.1 gigachat megrez yandex bailing bailing-think bailing2 llama4 smolvlm dots1 "
    "hunyuan-moe gpt-oss hunyuan-dense hunyuan-vl kimi-k2 seed_oss grok-2 pangu-embedded solar-open".split()
)

# oxl_pooling
_POOLING_NONE = 0

# llama.cpp's sampler names (common_sampler_types_from_names, with its kebab-case, no-dash and short
# aliases) as the library's letters (oxl_sampler_params.samplers).
_SAMPLER_LETTERS = {
    "penalties": "e", "dry": "d", "top_n_sigma": "s", "top-n-sigma": "s", "topnsigma": "s", "top_k": "k",
    "top-k": "k", "topk": "k", "typ_p": "y", "typ-p": "y", "typp": "y", "typ": "y", "top_p": "p", "top-p": "p",
    "topp": "p", "nucleus": "p", "min_p": "m", "min-p": "m", "minp": "m", "xtc": "x", "temperature": "t",
    "temp": "t", "top_a": "A", "top-a": "A", "topa": "A", "eta": "H",
}

# llama.cpp's DRY sequence breakers by default
_DRY_BREAKERS = ["\n", ":", "\"", "*"]


def _sampler_letters(samplers):
    """samplers: None, a string of letters ("edskypmxt") or a list of names -> the letter string."""
    if samplers is None:
        return ""
    if isinstance(samplers, str):
        bad = [c for c in samplers if c not in "edskypmxtAH"]
        if bad:
            raise ValueError("samplers: %r is not a sampler letter (one of e d s k y p m x t A H)" % bad[0])
        return samplers
    letters = ""
    for name in samplers:
        letter = _SAMPLER_LETTERS.get(str(name).lower())
        if letter is None:
            raise ValueError("samplers: %r is not a sampler name (penalties, dry, top_n_sigma, top_k, typ_p, top_p, "
                             "min_p, xtc, temperature)" % (name,))
        letters += letter
    return letters


def _sampling(temperature, top_k, top_p, min_p, repeat_penalty=1.0, frequency_penalty=0.0, presence_penalty=0.0,
              penalty_last_n=64, typical_p=1.0, top_n_sigma=-1.0, xtc_probability=0.0, xtc_threshold=0.1,
              dynatemp_range=0.0, dynatemp_exponent=1.0, mirostat_mode=0, mirostat_tau=5.0, mirostat_eta=0.1,
              dry_multiplier=0.0, dry_base=1.75, dry_allowed_length=2, dry_penalty_last_n=64,
              dry_sequence_breakers=None, samplers=None, logit_bias=None, grammar=None, response_format=None,
              top_a=0.0, eta=0.0):
    """The Sampler keyword arguments, the DRY breakers and the grammar text of the llama-cpp-python /
    llama.cpp names."""
    bias = None
    if logit_bias:
        bias = {int(k): float(v) for k, v in dict(logit_bias).items()}
    kw = dict(temp=float(temperature), top_k=int(top_k), top_p=float(top_p), min_p=float(min_p),
              penalty_last_n=int(penalty_last_n), penalty_repeat=float(repeat_penalty),
              penalty_freq=float(frequency_penalty), penalty_present=float(presence_penalty), typ_p=float(typical_p),
              top_n_sigma=float(top_n_sigma), xtc_probability=float(xtc_probability),
              xtc_threshold=float(xtc_threshold), dynatemp_range=float(dynatemp_range),
              dynatemp_exponent=float(dynatemp_exponent), mirostat=int(mirostat_mode),
              mirostat_tau=float(mirostat_tau), mirostat_eta=float(mirostat_eta), dry_multiplier=float(dry_multiplier),
              dry_base=float(dry_base), dry_allowed_length=int(dry_allowed_length),
              dry_penalty_last_n=int(dry_penalty_last_n), samplers=_sampler_letters(samplers), logit_bias=bias,
              top_a=float(top_a), eta=float(eta))
    breakers = _DRY_BREAKERS if dry_sequence_breakers is None else [str(b) for b in dry_sequence_breakers]
    return kw, breakers, _grammar_text(grammar, response_format)


class LlamaGrammar:
    """A GBNF grammar, as llama-cpp-python's LlamaGrammar: from_string(gbnf), from_file(path),
    from_json_schema(schema_json) (converted as llama.cpp converts it). Checked against a model's
    vocabulary when it is used (a bad grammar raises ValueError with line:column)."""

    def __init__(self, gbnf):
        self.gbnf = str(gbnf)

    @classmethod
    def from_string(cls, grammar, verbose=True):
        return cls(grammar)

    @classmethod
    def from_file(cls, file, verbose=True):
        with open(file, encoding="utf-8") as f:
            return cls(f.read())

    @classmethod
    def from_json_schema(cls, json_schema, verbose=True):
        if not isinstance(json_schema, str):
            json_schema = json.dumps(json_schema)
        return cls(json_schema_to_grammar(json_schema))


def _grammar_text(grammar, response_format):
    """The GBNF text of a grammar argument (LlamaGrammar or str) or an OpenAI response_format."""
    if grammar is not None and response_format is not None:
        raise ValueError("give grammar or response_format, not both")
    if grammar is not None:
        return grammar.gbnf if isinstance(grammar, LlamaGrammar) else str(grammar)
    if response_format is None:
        return None
    if not isinstance(response_format, dict):
        raise TypeError("response_format: expected a dict such as {'type': 'json_object'}")
    kind = response_format.get("type")
    if kind == "text":
        return None
    if kind == "json_object":
        return json_schema_to_grammar(json.dumps(response_format.get("schema", {})))
    if kind == "json_schema":
        spec = response_format.get("json_schema") or {}
        if "schema" not in spec:
            raise ValueError("response_format json_schema: 'schema' is required")
        return json_schema_to_grammar(json.dumps(spec["schema"]))
    raise ValueError("response_format: type %r is not one of text, json_object, json_schema" % (kind,))


class Llama:
    """A model and its context, as llama-cpp-python's Llama. Unsupported keyword arguments raise
    TypeError (they are not accepted and ignored)."""

    def __init__(
        self,
        model_path,
        *,
        n_ctx=512,
        n_batch=512,
        n_threads=None,
        seed=LLAMA_DEFAULT_SEED,
        verbose=False,
        embedding=False,
        chat_format=None,
        use_mmap=True,
        use_mlock=False,
        flash_attn=None,
        type_k=None,
        type_v=None,
        pooling_type=-1,
        repack=True,
        n_gpu_layers=0,
        main_gpu=None,
    ):
        self.model_path = os.fspath(model_path)
        self.verbose = bool(verbose)
        self._seed = int(seed)
        if chat_format is not None:
            fmt = _CHAT_FORMAT_ALIASES.get(chat_format, chat_format)
            if fmt not in _BUILTIN_CHAT_FORMATS:
                raise ValueError("chat_format %r is not a chat format oxillama renders (one of: %s)"
                                 % (chat_format, ", ".join(sorted(_BUILTIN_CHAT_FORMATS | set(_CHAT_FORMAT_ALIASES)))))
            chat_format = fmt
        self.chat_format = chat_format
        self._model = Model(self.model_path, use_mmap=use_mmap, use_mlock=use_mlock, repack=repack,
                            n_gpu_layers=int(n_gpu_layers), main_gpu=-1 if main_gpu is None else int(main_gpu))
        self._embedding = bool(embedding)
        ctx_kw = dict(n_ctx=int(n_ctx), n_batch=int(n_batch), n_threads=int(n_threads or 0),
                      embeddings=self._embedding, pooling=int(pooling_type))
        if flash_attn is not None:
            ctx_kw["flash_attn"] = 1 if flash_attn else 0
        if type_k is not None:
            ctx_kw["type_k"] = int(type_k)
        if type_v is not None:
            ctx_kw["type_v"] = int(type_v)
        self._ctx_kw = ctx_kw
        self._ctx = Context(self._model, **ctx_kw)
        self._tokens = []  # what the KV cache holds
        if self.verbose:
            import sys
            print("oxillama: %s, n_ctx %d" % (self._model.desc(), self._ctx.n_ctx()), file=sys.stderr)

    # --- model facts ------------------------------------------------------------------------
    def n_ctx(self):
        return self._ctx.n_ctx()

    def n_vocab(self):
        return self._model.n_vocab()

    def n_embd(self):
        return self._model.n_embd()

    def token_bos(self):
        return self._model.token_bos()

    def token_eos(self):
        return self._model.token_eos()

    @property
    def metadata(self):
        return {k: self._model.meta_val_str(k) for k in ("general.architecture", "general.name")
                if self._model.meta_val_str(k) is not None}

    # --- tokens -----------------------------------------------------------------------------
    def tokenize(self, text, add_bos=True, special=False):
        """tokenize(text: bytes, add_bos=True, special=False) -> list[int] (add_bos adds BOS/EOS as
        the vocabulary asks; special parses control tokens' text)."""
        if isinstance(text, str):
            raise TypeError("tokenize takes bytes (text.encode('utf-8')), as llama-cpp-python's")
        return self._model.tokenize(bytes(text), add_special=add_bos, parse_special=special)

    def detokenize(self, tokens, special=False):
        """detokenize(list[int]) -> bytes"""
        return self._model.detokenize(list(tokens), special=special)

    # --- decoding ---------------------------------------------------------------------------
    def _eval_prompt(self, tokens):
        """Makes the KV cache hold `tokens`, reusing the common prefix; leaves the last token's
        logits ready."""
        n = len(tokens)
        if n == 0:
            raise ValueError("the prompt is empty (no tokens)")
        if n > self._ctx.n_ctx():
            raise ValueError("Requested tokens (%d) exceed context window of %d" % (n, self._ctx.n_ctx()))
        keep = 0
        for a, b in zip(self._tokens, tokens):
            if a != b:
                break
            keep += 1
        keep = min(keep, n - 1)  # at least one token is decoded, for its logits
        self._ctx.truncate(keep)
        if self._ctx.n_past() != keep:  # a recurrent model cannot step back: start again
            self._ctx.truncate(0)
            keep = 0
        self._tokens = list(tokens[:keep])
        self._ctx.decode(tokens[keep:])
        self._tokens = list(tokens)

    def eval(self, tokens):
        """Evaluates tokens after the cached ones (llama-cpp-python's Llama.eval)."""
        tokens = list(tokens)
        self._ctx.decode(tokens)
        self._tokens.extend(tokens)

    def reset(self):
        self._ctx.truncate(0)
        self._tokens = []

    @property
    def n_tokens(self):
        return len(self._tokens)

    def logits(self, i=-1):
        """The logits of the last decode's last token (or token i when it kept them): a memoryview of
        n_vocab float32 (a copy: valid after later decodes; numpy.asarray() takes it as it is)."""
        return self._ctx.logits(i)

    def _generate(self, prompt_tokens, max_tokens, sampling, seed):
        """Yields (token, piece bytes) for each generated token; the last piece may be flushed bytes
        with token None. Sets self._finish to "stop" or "length". sampling: _sampling()'s pair."""
        self._eval_prompt(prompt_tokens)
        if seed is None:
            seed = self._seed
        kw, breakers, gbnf = sampling
        sampler = Sampler(seed=int(seed) & 0xFFFFFFFF, **kw)
        if gbnf is not None:
            sampler.set_grammar(self._model, gbnf)
        if kw["dry_multiplier"] > 0:
            sampler.dry_breakers(self._model, breakers)
        for t in prompt_tokens:  # the penalties' window starts with the prompt, as llama.cpp's does
            sampler.accept(t)
        detok = Detok(self._model)
        n_ctx = self._ctx.n_ctx()
        limit = max_tokens if max_tokens is not None and max_tokens > 0 else n_ctx
        self._finish = "length"
        n = 0
        while n < limit:
            tok = sampler.sample(self._ctx)
            sampler.accept(tok)
            if self._model.token_is_eog(tok):
                self._finish = "stop"
                break
            n += 1
            yield tok, detok.push(tok)
            if n >= limit or len(self._tokens) >= n_ctx:
                break
            self._ctx.decode([tok])
            self._tokens.append(tok)
        rest = detok.flush()
        if rest:
            yield None, rest

    # --- completions ------------------------------------------------------------------------
    def _prompt_tokens(self, prompt):
        if isinstance(prompt, str):
            return self._model.tokenize(prompt.encode("utf-8"), add_special=True, parse_special=True)
        if isinstance(prompt, (bytes, bytearray)):
            return self._model.tokenize(bytes(prompt), add_special=True, parse_special=True)
        return [int(t) for t in prompt]

    def _completion_stream(self, prompt, max_tokens, sampling, stop, seed, echo, completion_id, created):
        """Yields (text, finish_reason or None) pieces; the shared core of the streaming and the
        whole completion (so both give the same text by construction of the stop handling)."""
        if not self._model.has_decoder():
            raise ValueError("%s is an embedding model (no output head): it cannot generate text" % self.model_path)
        tokens = self._prompt_tokens(prompt)
        stops = [stop] if isinstance(stop, str) else list(stop or [])
        stops = [s for s in stops if s]
        self._usage = {"prompt_tokens": len(tokens), "completion_tokens": 0, "total_tokens": len(tokens)}
        if echo:
            yield self._model.detokenize(tokens).decode("utf-8", errors="ignore"), None
        text = ""  # generated text not yet yielded
        raw = b""
        for tok, piece in self._generate(tokens, max_tokens, sampling, seed):
            if tok is not None:
                self._usage["completion_tokens"] += 1
                self._usage["total_tokens"] += 1
            raw += piece
            text += piece.decode("utf-8", errors="ignore")
            hit = min((text.find(s) for s in stops if s in text), default=-1)
            if hit >= 0:
                if text[:hit]:
                    yield text[:hit], None
                self._finish = "stop"
                yield "", "stop"
                return
            # hold back a tail that could begin a stop string
            hold = 0
            for s in stops:
                for k in range(min(len(s) - 1, len(text)), 0, -1):
                    if text.endswith(s[:k]):
                        hold = max(hold, k)
                        break
            if len(text) > hold:
                yield text[:len(text) - hold], None
                text = text[len(text) - hold:]
        if text:
            yield text, None
        yield "", self._finish

    def create_completion(self, prompt, max_tokens=16, temperature=0.8, top_p=0.95, min_p=0.05, stop=None,
                          seed=None, stream=False, top_k=40, echo=False, **sampling):
        """An OpenAI-shaped text completion (llama-cpp-python's create_completion). prompt: str or
        token ids; max_tokens None or <= 0: until end of generation or a full context; temperature 0:
        greedy. stream=True returns a generator of chunks. Further sampling keywords (llama.cpp's chain,
        as llama-cpp-python and llama.cpp name them): repeat_penalty, frequency_penalty,
        presence_penalty, penalty_last_n (64), typical_p, top_n_sigma, xtc_probability, xtc_threshold,
        dynatemp_range, dynatemp_exponent, mirostat_mode, mirostat_tau, mirostat_eta, dry_multiplier,
        dry_base, dry_allowed_length, dry_penalty_last_n, dry_sequence_breakers, samplers (names or
        letters), logit_bias ({token id: bias}); an unknown keyword raises TypeError."""
        completion_id = "cmpl-" + str(uuid.uuid4())
        created = int(time.time())
        pieces = self._completion_stream(prompt, max_tokens, _sampling(temperature, top_k, top_p, min_p, **sampling),
                                         stop, seed, echo, completion_id, created)
        if stream:
            return self._chunks(pieces, completion_id, created)
        text, finish = "", None
        for t, f in pieces:
            text += t
            finish = f or finish
        return {
            "id": completion_id,
            "object": "text_completion",
            "created": created,
            "model": self.model_path,
            "choices": [{"text": text, "index": 0, "logprobs": None, "finish_reason": finish}],
            "usage": dict(self._usage),
        }

    def _chunks(self, pieces, completion_id, created):
        for t, f in pieces:
            if not t and f is None:
                continue
            yield {
                "id": completion_id,
                "object": "text_completion",
                "created": created,
                "model": self.model_path,
                "choices": [{"text": t, "index": 0, "logprobs": None, "finish_reason": f}],
            }

    def __call__(self, prompt, **kwargs):
        return self.create_completion(prompt, **kwargs)

    # --- chat -------------------------------------------------------------------------------
    def apply_chat_template(self, messages, add_generation_prompt=True, tools=None):
        """The prompt text the model's chat template (or chat_format) makes of messages (and tools,
        OpenAI's list of tool definitions)."""
        return self._model.apply_chat_template(json.dumps(list(messages)),
                                               json.dumps(list(tools)) if tools else None, add_generation_prompt,
                                               self.chat_format)

    def _required_tool_grammar(self, tools, tool_choice):
        """tool_choice "required" or {"type": "function", "function": {"name": N}}: a grammar admitting
        only <tool_call>{"name", "arguments"}</tool_call> blocks (the server's, for the Hermes 2 Pro and
        generic reply formats)."""
        fmt = self._model.chat_format(self.chat_format)
        if fmt not in ("Hermes 2 Pro", "Generic"):
            raise ValueError("tool_choice: a required or named tool is enforced for the Hermes 2 Pro and generic "
                             "reply formats; this model's template has the %r format" % fmt)
        only = None
        if isinstance(tool_choice, dict):
            only = (tool_choice.get("function") or {}).get("name")
            if not isinstance(only, str):
                raise ValueError("tool_choice: expected {'type': 'function', 'function': {'name': ...}}")
        alts = []
        for t in tools:
            fn = t.get("function") or {}
            if not isinstance(fn.get("name"), str) or (only is not None and fn["name"] != only):
                continue
            alts.append({"type": "object", "properties": {"name": {"const": fn["name"]},
                                                          "arguments": fn.get("parameters") or {}},
                         "required": ["name", "arguments"]})
        if not alts:
            raise ValueError("tool_choice: no tool named %r in tools" % (only,))
        call = json_schema_to_grammar(json.dumps({"anyOf": alts}))
        lines = ["tool ::= " + ln[len("root ::= "):] if ln.startswith("root ::= ") else ln for ln in call.split("\n")]
        return "\n".join(lines) + ('root ::= call-block ("\\n" call-block)*\n'
                                   'call-block ::= "<tool_call>" "\\n"? tool "\\n"? "</tool_call>"\n')

    def create_chat_completion(self, messages, tools=None, tool_choice=None, response_format=None, max_tokens=None,
                               temperature=0.2, top_p=0.95, top_k=40, min_p=0.05, stop=None, seed=None,
                               stream=False, **sampling):
        """An OpenAI-shaped chat completion, the prompt rendered by the library from the model's chat
        template (or chat_format). response_format (OpenAI's: text, json_object, json_schema) and
        grammar (a LlamaGrammar or GBNF text) constrain the reply. tools (OpenAI's definitions) go
        to the template and the reply is parsed by the library (oxl_chat_parse: tool_calls with
        JSON-text arguments, content None when the reply is only calls, reasoning_content);
        tool_choice "none", "auto", "required" or a named function (the last two enforced by a
        grammar for the Hermes 2 Pro and generic reply formats)."""
        if tool_choice == "none":
            tools = None
        if tool_choice is not None and tool_choice not in ("none", "auto", "required") and not isinstance(tool_choice, dict):
            raise ValueError("tool_choice: %r is not one of none, auto, required or a named function" % (tool_choice,))
        tools = list(tools) if tools else None
        if tool_choice is not None and tool_choice not in ("none", "auto"):
            if not tools:
                raise ValueError("tool_choice: a required or named tool needs a non-empty tools list")
            if sampling.get("grammar") is not None or response_format is not None:
                raise ValueError("tool_choice: a required or named tool cannot be combined with grammar or "
                                 "response_format")
            sampling["grammar"] = self._required_tool_grammar(tools, tool_choice)
        prompt = self.apply_chat_template(messages, tools=tools)
        tokens = self._model.tokenize(prompt.encode("utf-8"), add_special=True, parse_special=True)
        completion_id = "chatcmpl-" + str(uuid.uuid4())
        created = int(time.time())
        pieces = self._completion_stream(tokens, max_tokens,
                                         _sampling(temperature, top_k, top_p, min_p, response_format=response_format,
                                                   **sampling),
                                         stop, seed, False, completion_id, created)
        if tools:
            text, finish = "", None
            for t, f in pieces:
                text += t
                finish = f or finish
            opts = json.dumps({"tools": tools, "prompt": prompt[-4096:]})
            message = json.loads(self._model.chat_parse(text, self.chat_format, opts))
            message["role"] = "assistant"
            if message.get("tool_calls"):
                finish = "tool_calls"
            if stream:
                return self._tool_chunks(message, finish, completion_id, created)
            return {"id": completion_id, "object": "chat.completion", "created": created, "model": self.model_path,
                    "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
                    "usage": dict(self._usage)}
        if stream:
            return self._chat_chunks(pieces, completion_id, created)
        text, finish = "", None
        for t, f in pieces:
            text += t
            finish = f or finish
        return {
            "id": completion_id,
            "object": "chat.completion",
            "created": created,
            "model": self.model_path,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "logprobs": None,
                         "finish_reason": finish}],
            "usage": dict(self._usage),
        }

    def _tool_chunks(self, message, finish, completion_id, created):
        """A parsed reply as OpenAI's stream: role, reasoning and content deltas, then each call's delta
        (index, id, type and name with its arguments), then the finish reason."""
        def chunk(delta, fin):
            return {"id": completion_id, "object": "chat.completion.chunk", "created": created,
                    "model": self.model_path,
                    "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": fin}]}

        yield chunk({"role": "assistant"}, None)
        if message.get("reasoning_content"):
            yield chunk({"reasoning_content": message["reasoning_content"]}, None)
        if message.get("content"):
            yield chunk({"content": message["content"]}, None)
        for i, call in enumerate(message.get("tool_calls") or []):
            yield chunk({"tool_calls": [{"index": i, "id": call.get("id"), "type": "function",
                                         "function": call["function"]}]}, None)
        yield chunk({}, finish)

    def _chat_chunks(self, pieces, completion_id, created):
        def chunk(delta, finish):
            return {"id": completion_id, "object": "chat.completion.chunk", "created": created,
                    "model": self.model_path,
                    "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}

        yield chunk({"role": "assistant"}, None)
        for t, f in pieces:
            if t:
                yield chunk({"content": t}, None)
            if f is not None:
                yield chunk({}, f)

    # --- embeddings -------------------------------------------------------------------------
    def embed(self, input, normalize=False, truncate=True):
        """Embeddings of input: a str (-> list[float]), a list of str (-> a list of those), or one
        sequence of token ids (a list of int, as OpenAI's embeddings input). With the model's pooling
        none, each embedding is a list of per-token vectors. Needs Llama(embedding=True)."""
        if not self._embedding:
            raise RuntimeError("Llama model must be created with embedding=True to call this method")
        if isinstance(input, str):
            return self._embed_one(self._prompt_tokens(input), normalize, truncate)
        items = list(input)
        if items and all(isinstance(t, int) for t in items):
            return self._embed_one(items, normalize, truncate)
        return [self._embed_one(self._prompt_tokens(s), normalize, truncate) for s in items]

    def _embed_one(self, tokens, normalize, truncate):
        n_ctx = self._ctx.n_ctx()
        if len(tokens) > n_ctx:
            if not truncate:
                raise ValueError("Requested tokens (%d) exceed context window of %d" % (len(tokens), n_ctx))
            tokens = tokens[:n_ctx]
        self.reset()
        self._ctx.decode(tokens)
        self._tokens = list(tokens)

        def fix(v):
            v = list(v)
            if normalize:
                s = math.sqrt(sum(x * x for x in v))
                v = [x / s for x in v] if s > 0 else v
            return v

        if self._ctx.pooling() == _POOLING_NONE:
            return [fix(self._ctx.embeddings_ith(i)) for i in range(len(tokens))]
        return fix(self._ctx.embeddings_seq(0))

    def create_embedding(self, input, model=None):
        """OpenAI-shaped embeddings (llama-cpp-python's create_embedding)."""
        many = not isinstance(input, str) and not (input and all(isinstance(t, int) for t in input))
        inputs = list(input) if many else [input]
        data = []
        n_tok = 0
        for i, item in enumerate(inputs):
            toks = item if not isinstance(item, str) else self._prompt_tokens(item)
            n_tok += len(toks)
            data.append({"object": "embedding", "embedding": self.embed(list(toks)), "index": i})
        return {"object": "list", "data": data, "model": model or self.model_path,
                "usage": {"prompt_tokens": n_tok, "total_tokens": n_tok}}
