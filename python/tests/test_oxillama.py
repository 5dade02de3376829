"""The Python package against llama.cpp's goldens (golden/README.md): the greedy text, the prompt's
token ids and logits of stories260K, bert's embeddings, a built-in chat format's rendering; and its
behaviour on bad input (a missing file, an unknown keyword argument, arguments not offered).

Run by ctest `python` as `<python> -m pytest python/tests` with PYTHONPATH=build/python (the module
the CMake build makes)."""
import json
import os
import struct
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from gguf_kv import Gguf  # noqa: E402  (the project's GGUF reader)

import oxillama  # noqa: E402
from oxillama import LlamaGrammar, Llama  # noqa: E402

MODEL = os.path.join(ROOT, "models", "stories260K.gguf")
GOLDEN = os.path.join(ROOT, "golden")
PROMPT = "Once upon a time"


def read_text(path):
    with open(path, "rb") as f:
        return f.read().decode("utf-8")


def golden_ints(g, name):
    ne, _, data = g.tensor[name]
    return list(struct.unpack("<%di" % (len(data) // 4), data))


def golden_floats(g, name):
    ne, _, data = g.tensor[name]
    return list(struct.unpack("<%df" % (len(data) // 4), data))


def tolerance(folder, key):
    """The x86-64 bound of `key` in golden/<folder>/tolerances.tsv."""
    with open(os.path.join(GOLDEN, folder, "tolerances.tsv")) as f:
        for line in f:
            cols = line.rstrip("\n").split("\t")
            if cols[0] == key:
                return float(cols[1])
    raise KeyError(key)


@pytest.fixture(scope="module")
def llm():
    return Llama(MODEL, n_ctx=256, n_threads=2)


# --- generation ------------------------------------------------------------------------------

def test_greedy_text_is_llamacpp_greedy_run(llm):
    # golden/run/once.expected: llama-simple's 64 greedy tokens after "Once upon a time"
    want = read_text(os.path.join(GOLDEN, "run", "once.expected"))
    out = llm(PROMPT, max_tokens=64, temperature=0)
    assert out["object"] == "text_completion"
    assert out["id"].startswith("cmpl-") and isinstance(out["created"], int)
    assert out["model"] == MODEL
    choice = out["choices"][0]
    assert choice["index"] == 0
    assert choice["text"] == want
    assert choice["finish_reason"] == "length"
    assert out["usage"] == {"prompt_tokens": 5, "completion_tokens": 64, "total_tokens": 69}


def test_greedy_tokens_detokenize_to_golden_text(llm):
    # golden/models/stories260K.once.gguf `greedy`: llama.cpp's argmax continuation (64 ids)
    g = Gguf(os.path.join(GOLDEN, "models", "stories260K.once.gguf"))
    greedy = golden_ints(g, "greedy")
    assert llm.detokenize(greedy) == read_text(os.path.join(GOLDEN, "run", "once.expected")).encode("utf-8")


def test_streaming_equals_whole_completion(llm):
    whole = llm.create_completion(PROMPT, max_tokens=64, temperature=0)
    chunks = list(llm.create_completion(PROMPT, max_tokens=64, temperature=0, stream=True))
    assert len(chunks) > 10  # one chunk per piece, not one for all
    for c in chunks:
        assert c["object"] == "text_completion" and c["id"] == chunks[0]["id"]
    assert "".join(c["choices"][0]["text"] for c in chunks) == whole["choices"][0]["text"]
    assert [c["choices"][0]["finish_reason"] for c in chunks][-1] == "length"
    assert all(c["choices"][0]["finish_reason"] is None for c in chunks[:-1])


def test_stop_string_cuts_text_in_both_modes(llm):
    want = read_text(os.path.join(GOLDEN, "run", "once.expected"))
    cut = want[:want.index("park")]
    out = llm(PROMPT, max_tokens=64, temperature=0, stop=["park", "zzz"])
    assert out["choices"][0]["text"] == cut
    assert out["choices"][0]["finish_reason"] == "stop"
    chunks = list(llm(PROMPT, max_tokens=64, temperature=0, stop="park", stream=True))
    assert "".join(c["choices"][0]["text"] for c in chunks) == cut
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


def sampling_cases():
    """golden/sampling/cases.tsv's cases on stories260K.gguf (f32), the ones `oxillama run` passes too
    (ctest sampling-f32-*; the Q8_0/Q4_0 cases are disabled there: golden/sampling/README.md)."""
    cases = []
    with open(os.path.join(GOLDEN, "sampling", "cases.tsv"), encoding="utf-8") as f:
        for line in f:
            cols = line.rstrip("\n").split("\t")
            if line.startswith("#") or len(cols) < 9 or cols[1] != "stories260K.gguf":
                continue
            cases.append(pytest.param(cols, id=cols[0]))
    assert len(cases) >= 20
    return cases


@pytest.mark.parametrize("case", sampling_cases())
def test_seeded_sampling_is_llama_completion(case):
    # llama-completion -p PROMPT -n N -s SEED --temp T --top-k K --top-p P --min-p M -t 1
    name, model, seed, temp, top_k, top_p, min_p, n, prompt = case[:9]
    want = read_text(os.path.join(GOLDEN, "sampling", name + ".expected"))
    llm = Llama(os.path.join(ROOT, "models", model), n_threads=1)
    out = llm(prompt, max_tokens=int(n), seed=int(seed), temperature=float(temp), top_k=int(top_k),
              top_p=float(top_p), min_p=float(min_p))
    assert out["choices"][0]["text"] == want


# llama-completion's sampler flags (golden/sampling/chains.tsv) as create_completion's keywords
_CHAIN_FLAGS = {
    "--repeat-penalty": ("repeat_penalty", float), "--repeat-last-n": ("penalty_last_n", int),
    "--frequency-penalty": ("frequency_penalty", float), "--presence-penalty": ("presence_penalty", float),
    "--typical": ("typical_p", float), "--top-nsigma": ("top_n_sigma", float), "--top-k": ("top_k", int),
    "--top-p": ("top_p", float), "--min-p": ("min_p", float), "--xtc-probability": ("xtc_probability", float),
    "--xtc-threshold": ("xtc_threshold", float), "--dynatemp-range": ("dynatemp_range", float),
    "--dynatemp-exp": ("dynatemp_exponent", float), "--mirostat": ("mirostat_mode", int),
    "--mirostat-ent": ("mirostat_tau", float), "--mirostat-lr": ("mirostat_eta", float),
    "--dry-multiplier": ("dry_multiplier", float), "--dry-base": ("dry_base", float),
    "--dry-allowed-length": ("dry_allowed_length", int), "--dry-penalty-last-n": ("dry_penalty_last_n", int),
    "--samplers": ("samplers", lambda v: v.split(";")), "--sampling-seq": ("samplers", str),
}


def chain_cases():
    """golden/sampling/chains.tsv: llama-completion's seeded texts with the further samplers."""
    cases = []
    with open(os.path.join(GOLDEN, "sampling", "chains.tsv"), encoding="utf-8") as f:
        for line in f:
            cols = line.rstrip("\n").split("\t")
            if line.startswith("#") or len(cols) < 7:
                continue
            cases.append(pytest.param(cols, id=cols[0]))
    assert len(cases) >= 30
    return cases


@pytest.mark.parametrize("case", chain_cases())
def test_sampler_chain_is_llama_completion(case):
    # llama-completion -p PROMPT -n N --seed S --temp T FLAGS -no-cnv -t 1
    name, model, seed, temp, n, flags, prompt = case[:7]
    want = read_text(os.path.join(GOLDEN, "sampling", "chains", name + ".expected"))
    kw = {}
    words = flags.split()
    i = 0
    while i < len(words):
        flag, value = words[i], words[i + 1]
        i += 2
        if flag == "--dry-sequence-breaker":
            kw.setdefault("dry_sequence_breakers", [])
            if value != "none":
                kw["dry_sequence_breakers"].append(value)
            continue
        key, conv = _CHAIN_FLAGS[flag]
        kw[key] = conv(value)
    llm = Llama(os.path.join(ROOT, "models", model), n_threads=1)
    out = llm(prompt, max_tokens=int(n), seed=int(seed), temperature=float(temp), **kw)
    assert out["choices"][0]["text"] == want


def test_sampler_keywords_checked(llm):
    with pytest.raises(TypeError):
        llm(PROMPT, max_tokens=2, mirostat_foo=1)
    with pytest.raises(ValueError):
        llm(PROMPT, max_tokens=2, samplers=["top_k", "nope"])
    with pytest.raises(ValueError):
        llm(PROMPT, max_tokens=2, mirostat_mode=3)
    # logit_bias as OpenAI sends it (token ids as strings): +100 makes greedy pick that token every time
    tok = llm.tokenize(b" Lily", add_bos=False)[-1]
    out = llm(PROMPT, max_tokens=4, temperature=0, logit_bias={str(tok): 100})
    assert out["choices"][0]["text"] == " Lily" * 4


# --- tokens and logits -------------------------------------------------------------------------

def test_tokenize_is_golden_prompt_ids(llm):
    # the prompt ids llama.cpp used (BOS added as the model asks): golden/models/stories260K.once.gguf
    g = Gguf(os.path.join(GOLDEN, "models", "stories260K.once.gguf"))
    want = golden_ints(g, "tokens")
    assert llm.tokenize(PROMPT.encode()) == want
    assert llm.tokenize(PROMPT.encode(), add_bos=False) == want[1:]
    assert llm.detokenize(want[1:]) == b" " + PROMPT.encode()
    with pytest.raises(TypeError):
        llm.tokenize(PROMPT)  # bytes, as llama-cpp-python


def test_version_is_the_projects():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        want = next(line.split("VERSION")[1].split()[0] for line in f if line.startswith("project(oxillama"))
    assert oxillama.__version__ == want


def test_model_facts(llm):
    assert llm.n_ctx() == 256
    assert llm.n_vocab() == 512
    assert llm.token_bos() == 1
    assert llm.token_eos() == 2


def test_logits_are_golden_logits():
    # golden/models/stories260K.once.gguf `logits`: llama.cpp's logits after each prompt token (f32 KV
    # cache, no flash attention); bound: golden/models/tolerances.tsv (max|Δ|/range of the row)
    g = Gguf(os.path.join(GOLDEN, "models", "stories260K.once.gguf"))
    ref = golden_floats(g, "logits")
    n_vocab = g.tensor["logits"][0][0]
    last = ref[-n_vocab:]
    llm = Llama(MODEL, n_ctx=64, n_threads=2, type_k=0, type_v=0, flash_attn=False)
    llm.eval(golden_ints(g, "tokens"))
    mv = llm.logits()
    assert isinstance(mv, memoryview) and mv.format == "f" and mv.itemsize == 4 and mv.shape == (n_vocab,)
    got = mv.tolist()
    dev = max(abs(a - b) for a, b in zip(got, last)) / (max(last) - min(last))
    assert dev <= tolerance("models", "stories260K.once.gguf"), dev
    llm.eval([got.index(max(got))])  # a later decode leaves the returned copy unchanged
    assert mv.tolist() == got


# --- embeddings ------------------------------------------------------------------------------

def embeddings_golden():
    g = Gguf(os.path.join(GOLDEN, "arch", "bert.logits.gguf"))
    return g, os.path.join(GOLDEN, "arch", g.meta["golden.model"])


def rel_dev(got, ref):
    return max(abs(a - b) for a, b in zip(got, ref)) / max(abs(b) for b in ref)


def test_embeddings_are_golden_pooled():
    # golden/arch/bert.logits.gguf `embd`: llama_get_embeddings_seq with the model's pooling (cls)
    g, model = embeddings_golden()
    tokens = golden_ints(g, "tokens")
    llm = Llama(model, embedding=True, n_ctx=len(tokens) + 1, n_threads=2, type_k=0, type_v=0, flash_attn=False)
    got = llm.embed(tokens)
    ref = golden_floats(g, "embd")
    assert len(got) == len(ref) == g.meta["golden.n_embd"]
    dev = rel_dev(got, ref)
    assert dev <= tolerance("arch", "bert.logits.gguf:pooled"), dev


def test_embeddings_are_golden_per_token():
    # `embd_tokens`: the same batch with pooling none
    g, model = embeddings_golden()
    tokens = golden_ints(g, "tokens")
    llm = Llama(model, embedding=True, pooling_type=0, n_ctx=len(tokens) + 1, n_threads=2, type_k=0, type_v=0,
                flash_attn=False)
    got = llm.embed(tokens)
    assert len(got) == len(tokens)
    ref = golden_floats(g, "embd_tokens")
    dev = rel_dev([x for row in got for x in row], ref)
    assert dev <= tolerance("arch", "bert.logits.gguf:tokens"), dev


def test_embed_needs_embedding_model_flag(llm):
    with pytest.raises(RuntimeError, match="embedding=True"):
        llm.embed("hello")


def test_encoder_cannot_generate():
    g, model = embeddings_golden()
    llm = Llama(model, embedding=True, n_ctx=64)
    with pytest.raises(ValueError, match="embedding model"):
        llm("hello", max_tokens=4)


# --- chat ------------------------------------------------------------------------------------

def test_chat_format_renders_llamacpp_builtin():
    # golden/chat-builtin: llama.cpp's test vectors; the OpenHermes case is its chatml rendering
    with open(os.path.join(GOLDEN, "chat-builtin", "llama-cpp-test-chat-template.json")) as f:
        vectors = json.load(f)
    case = next(c for c in vectors["cases"] if c["name"] == "teknium/OpenHermes-2.5-Mistral-7B")
    llm = Llama(MODEL, n_ctx=256, chat_format="chatml")
    assert llm.apply_chat_template(vectors["conversation"]) == case["expected_builtin"]


def test_chat_completion_shapes(llm):
    msgs = [{"role": "user", "content": "Tell me a story"}]
    out = llm.create_chat_completion(msgs, max_tokens=12, temperature=0)
    assert out["object"] == "chat.completion"
    msg = out["choices"][0]["message"]
    assert msg["role"] == "assistant" and isinstance(msg["content"], str)
    chunks = list(llm.create_chat_completion(msgs, max_tokens=12, temperature=0, stream=True))
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant"}
    assert "".join(c["choices"][0]["delta"].get("content", "") for c in chunks) == msg["content"]
    assert chunks[-1]["choices"][0]["finish_reason"] == out["choices"][0]["finish_reason"]


@pytest.fixture(scope="module")
def toolcall_llm(tmp_path_factory):
    # tests/server/make_toolcall_model.py's model: under ChatML it answers "Let me check." and one
    # get_weather call in Hermes <tool_call> tags
    path = str(tmp_path_factory.mktemp("tools") / "toolcall.gguf")
    import subprocess
    subprocess.run([sys.executable, os.path.join(ROOT, "tests", "server", "make_toolcall_model.py"), path], check=True)
    return Llama(path, n_ctx=2048, n_threads=1)


TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
         "properties": {"city": {"type": "string"}, "unit": {"type": "string"}}}}},
         {"type": "function", "function": {"name": "add", "parameters": {"type": "object",
          "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}}]
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]


def test_chat_tool_calls_parsed(toolcall_llm):
    out = toolcall_llm.create_chat_completion(ASK, tools=TOOLS, temperature=0)
    ch = out["choices"][0]
    m = ch["message"]
    assert ch["finish_reason"] == "tool_calls" and m["content"] == "Let me check."
    assert len(m["tool_calls"]) == 1 and m["tool_calls"][0]["function"]["name"] == "get_weather"
    assert isinstance(m["tool_calls"][0]["function"]["arguments"], str)
    assert json.loads(m["tool_calls"][0]["function"]["arguments"]) == {"city": "Paris", "unit": "celsius"}
    assert m["tool_calls"][0]["id"] and m["tool_calls"][0]["type"] == "function"
    chunks = list(toolcall_llm.create_chat_completion(ASK, tools=TOOLS, temperature=0, stream=True))
    content = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    calls = [tc for c in chunks for tc in c["choices"][0]["delta"].get("tool_calls") or []]
    assert content == "Let me check." and len(calls) == 1 and calls[0]["function"] == m["tool_calls"][0]["function"]
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
    # tool_choice "none" withholds the tools: the reply stays text
    plain = toolcall_llm.create_chat_completion(ASK, tools=TOOLS, tool_choice="none", temperature=0)
    assert "tool_calls" not in plain["choices"][0]["message"]


def test_chat_tool_choice_required_and_named(toolcall_llm):
    for seed in range(1, 7):
        out = toolcall_llm.create_chat_completion(ASK, tools=TOOLS, tool_choice="required", temperature=1.0,
                                                  seed=seed, max_tokens=300)
        m = out["choices"][0]["message"]
        assert m["content"] is None and m["tool_calls"], m
        for c in m["tool_calls"]:
            args = json.loads(c["function"]["arguments"])
            if c["function"]["name"] == "add":
                assert type(args["a"]) is int and type(args["b"]) is int and set(args) == {"a", "b"}
            else:
                assert c["function"]["name"] == "get_weather" and set(args) <= {"city", "unit"}
    named = {"type": "function", "function": {"name": "add"}}
    for seed in range(1, 4):
        out = toolcall_llm.create_chat_completion(ASK, tools=TOOLS, tool_choice=named, temperature=1.0, seed=seed,
                                                  max_tokens=300)
        assert all(c["function"]["name"] == "add" for c in out["choices"][0]["message"]["tool_calls"])
    with pytest.raises(ValueError, match="no tool named 'nope'"):
        toolcall_llm.create_chat_completion(ASK, tools=TOOLS, tool_choice={"type": "function",
                                                                           "function": {"name": "nope"}})
    with pytest.raises(ValueError, match="needs a non-empty tools list"):
        toolcall_llm.create_chat_completion(ASK, tool_choice="required")


# --- bad input -------------------------------------------------------------------------------

def test_missing_file_raises(tmp_path):
    path = str(tmp_path / "absent.gguf")
    with pytest.raises(FileNotFoundError) as e:
        Llama(path)
    assert "absent.gguf" in str(e.value)


def test_not_a_model_raises_library_message(tmp_path):
    path = tmp_path / "trunc.gguf"
    with open(MODEL, "rb") as f:
        path.write_bytes(f.read(100))
    with pytest.raises(ValueError, match="trunc.gguf"):
        Llama(str(path))


def test_unknown_keyword_raises():
    with pytest.raises(TypeError, match="tensor_split"):
        Llama(MODEL, tensor_split=[1.0])


def test_n_gpu_layers_keeps_the_greedy_text(llm):
    # on a Vulkan device when there is one (README "GPU offload (Vulkan)"), else on the CPU after one line
    want = llm(PROMPT, max_tokens=16, temperature=0)["choices"][0]["text"]
    gpu = Llama(MODEL, n_gpu_layers=99)
    assert gpu(PROMPT, max_tokens=16, temperature=0)["choices"][0]["text"] == want


def test_unknown_completion_keyword_raises(llm):
    with pytest.raises(TypeError, match="grammar_lazy"):
        llm(PROMPT, grammar_lazy=True)


def json_schema_cases():
    cases = []
    with open(os.path.join(GOLDEN, "sampling", "json-schema.tsv"), encoding="utf-8") as f:
        for line in f:
            cols = line.rstrip("\n").split("\t")
            if not line.startswith("#") and len(cols) >= 8:
                cases.append(pytest.param(cols, id=cols[0]))
    assert len(cases) == 15
    return cases


@pytest.mark.parametrize("case", json_schema_cases())
def test_json_schema_is_llama_completion(case):
    # llama-completion -jf SCHEMA (golden/sampling/json-schema.tsv), through LlamaGrammar.from_json_schema
    name, model, schema, seed, temp, n, flags, prompt = case[:8]
    assert flags == "--top-k 40"
    want = read_text(os.path.join(GOLDEN, "sampling", "grammar", name + ".expected"))
    with open(os.path.join(GOLDEN, "json_schema", "schemas", schema), encoding="utf-8") as f:
        grammar = LlamaGrammar.from_json_schema(f.read())
    llm = Llama(os.path.join(ROOT, "models", model), n_threads=1)
    out = llm(prompt, max_tokens=int(n), seed=int(seed), temperature=float(temp), top_k=40, grammar=grammar)
    assert out["choices"][0]["text"] == want


def test_response_format_json_schema(llm):
    with open(os.path.join(GOLDEN, "json_schema", "schemas", "person.json"), encoding="utf-8") as f:
        schema = json.load(f)
    rf = {"type": "json_schema", "json_schema": {"name": "person", "schema": schema, "strict": True}}
    for seed in range(1, 11):
        out = llm.create_chat_completion([{"role": "user", "content": "Who?"}], response_format=rf, seed=seed,
                                         temperature=1.0, max_tokens=300)
        o = json.loads(out["choices"][0]["message"]["content"])
        assert set(o) == {"name", "age"} and isinstance(o["name"], str) and len(o["name"]) <= 12
        assert type(o["age"]) is int and 0 <= o["age"] <= 120
    with pytest.raises(ValueError, match="1:10"):
        llm(PROMPT, max_tokens=2, grammar="root ::= foo")
    with pytest.raises(ValueError, match="Unrecognized schema"):
        LlamaGrammar.from_json_schema({"type": "kaboom"})


def test_bad_token_raises_library_error(llm):
    with pytest.raises(ValueError):
        llm.detokenize([10**6])
    with pytest.raises(oxillama.OxlError):
        llm.eval([99999])
