#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz harnesses into tests/fuzz/corpus/<harness>/.

Seeds are small (a few KB each) and deterministic, so rerunning this script rewrites the same
bytes:
  - a tiny llama model (2 layers, n_embd 32 or 16, 16 tokens) with f32, f16 and q8_0 weights, which loads
    and decodes: it gets the model harness past the loader into the forward pass;
  - a metadata-only file with every value type, nested arrays and an alignment key;
  - the tokenizer metadata of models/stories260K.gguf (its 512 tokens, scores and types) without
    the tensors, and the first 16 KB of that file (a truncated header);
  - for the vocabulary harness: [u32 length][GGUF][text] inputs with plain, special-token and
    non-ASCII texts, over SentencePiece vocabularies and small BPE (several pre-tokenizers),
    WordPiece and Unigram ones;
  - for the chat-template harness: [selector][template] inputs, real templates of
    golden/chat-templates/ (the smaller ones), and [selector][JSON] inputs, the conversations of
    golden/chat-templates/cases.json for some real templates and built-in formats;
  - for the request harness: [route][JSON body] inputs for every route, with most fields set;
  - for the grammar harness: [GBNF]\0[text] inputs, llama.cpp's example grammars of
    golden/grammars/ with texts they match (in part) and a grammar with token references;
  - for the chat reply parser: [selector][reply] inputs, the replies of golden/chat-parse/cases.json;
  - for the mmproj harness: [width][height][images][u16 length][prompt][GGUF] inputs, the metadata of
    golden/mm/'s mmproj files (LLaVA-1.5, LLaVA-NeXT, Qwen2-VL, Qwen2.5-VL, Gemma 3) without their tensors, with
    prompts with and without image markers;
  - for the split harness: the q8_0 tiny llama split into parts of 8 and of 12 tensors by
    tests/cli/split_gguf.py (llama-gguf-split's layout), the parts joined by "\nOXLPART";
  - for the clip harness (the mmproj vision tower): tiny towers (patch 2) with the mlp projector
    (f32, f16, q8_0 matrices; one with clip.vision.feature_layer), the qwen2vl_merger projector, the
    qwen2.5vl_merger one (RMSNorm, gated FFN, window attention) and the gemma3 projector (f32, f16).
Layout of GGUF: ggml docs/gguf.md.
"""
import os
import random
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(HERE))
from gguf_kv import (ARR, BOOL, F32, F64, I8, I16, I32, I64, STR, T_F16, T_F32, T_Q8_0, U8, U16,  # noqa: E402
                     U32, U64, gstr, kv, kv_arr, kv_f32, kv_str, kv_u32)


def gguf(kvs, tensors, align=32):
    """tensors: (name, ne tuple, type id, raw bytes); data laid out in order, each aligned."""
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs)) + b"".join(kvs)
    data, infos = b"", b""
    for name, ne, ttype, raw in tensors:
        data += b"\0" * (-len(data) % align)
        infos += gstr(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<q", n) for n in ne)
        infos += struct.pack("<IQ", ttype, len(data))
        data += raw
    out += infos
    if tensors:
        out += b"\0" * (-len(out) % align)
    return out + data


def f16_bytes(vals):
    return b"".join(struct.pack("<e", v) for v in vals)


def q8_0_bytes(vals):
    out = b""
    for i in range(0, len(vals), 32):
        blk = vals[i:i + 32]
        amax = max(abs(v) for v in blk)
        d = amax / 127 if amax else 0.0
        out += struct.pack("<e", d) + bytes((round(v / d) if d else 0) & 0xFF for v in blk)
    return out


TINY_TOKENS = ["<unk>", "<s>", "</s>", "\u2581", "\u2581a", "\u2581b", "a", "b", "ab", "\u2581ab", "<0x41>",
               "<0x0A>", "\u00e9", "<|im_end|>", "c", "\u2581c"]
TINY_TYPES = [2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 6, 6, 1, 4, 1, 1]  # normal 1, unknown 2, control 3, user 4, byte 6


def tiny_vocab_kvs():
    return [
        kv_str("tokenizer.ggml.model", "llama"),
        kv_arr("tokenizer.ggml.tokens", STR, TINY_TOKENS),
        kv_arr("tokenizer.ggml.scores", F32, [-float(i) for i in range(len(TINY_TOKENS))]),
        kv_arr("tokenizer.ggml.token_type", I32, TINY_TYPES),
        kv_u32("tokenizer.ggml.bos_token_id", 1),
        kv_u32("tokenizer.ggml.eos_token_id", 2),
    ]


def other_vocab_kvs(model, pre=None):
    """Small vocabularies of the other tokenizer families: byte-level BPE (GPT-2's alphabet, with
    merges and a pre-tokenizer name), WordPiece (bert) and Unigram (t5)."""
    if model in ("gpt2", "gemma4", "whitespace"):
        toks = ["<|endoftext|>", "a", "b", "c", "\u0120", "\u0120a", "ab", "\u010a", "e", "\u00c3", "\u00a9", "1", "12"]
        types = [3] + [1] * (len(toks) - 1)
        kvs = [kv_arr("tokenizer.ggml.merges", STR, ["a b", "\u0120 a", "1 2", "\u00c3 \u00a9"]),
               kv_u32("tokenizer.ggml.bos_token_id", 0), kv_u32("tokenizer.ggml.eos_token_id", 0)]
    elif model == "bert":
        toks = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "\u2581a", "\u2581b", "b", "\u2581ab", "c", "\u2581hello"]
        types = [3, 2, 3, 3, 3] + [1] * (len(toks) - 5)
        kvs = [kv_u32("tokenizer.ggml.unknown_token_id", 1), kv_u32("tokenizer.ggml.bos_token_id", 2),
               kv_u32("tokenizer.ggml.seperator_token_id", 3), kv_u32("tokenizer.ggml.padding_token_id", 0),
               kv_u32("tokenizer.ggml.mask_token_id", 4)]
    else:  # t5
        toks = ["<pad>", "</s>", "<unk>", "\u2581", "a", "b", "\u2581a", "ab", "c", "\u2581c"]
        types = [3, 3, 2] + [1] * (len(toks) - 3)
        kvs = [kv_arr("tokenizer.ggml.scores", F32, [-float(i) for i in range(len(toks))])]
    kvs = [kv_str("tokenizer.ggml.model", model), kv_arr("tokenizer.ggml.tokens", STR, toks),
           kv_arr("tokenizer.ggml.token_type", I32, types)] + kvs
    if pre:
        kvs.append(kv_str("tokenizer.ggml.pre", pre))
    return kvs


OTHER_VOCABS = [("gpt2", "default"), ("gpt2", "llama3"), ("gpt2", "qwen2"), ("gpt2", "gpt-2"),
                ("gpt2", "deepseek-llm"), ("gpt2", "tekken"), ("gemma4", None), ("whitespace", None),
                ("bert", None), ("t5", None)]


def tiny_llama(wtype, E=32):
    rng = random.Random(10)
    F, L, NH, NKV = E, 2, 4, 2
    HD = E // NH
    V = len(TINY_TOKENS)

    def mat(ne0, ne1, t):
        vals = [rng.uniform(-0.5, 0.5) for _ in range(ne0 * ne1)]
        if t == T_F16:
            return f16_bytes(vals)
        if t == T_Q8_0:
            return q8_0_bytes(vals)
        return struct.pack("<%df" % len(vals), *vals)

    def norm():
        return struct.pack("<%df" % E, *[1.0 + rng.uniform(-0.1, 0.1) for _ in range(E)])

    tensors = [("token_embd.weight", (E, V), wtype, mat(E, V, wtype)), ("output_norm.weight", (E,), T_F32, norm())]
    for il in range(L):
        p = "blk.%d." % il
        tensors += [
            (p + "attn_norm.weight", (E,), T_F32, norm()),
            (p + "attn_q.weight", (E, NH * HD), wtype, mat(E, NH * HD, wtype)),
            (p + "attn_k.weight", (E, NKV * HD), wtype, mat(E, NKV * HD, wtype)),
            (p + "attn_v.weight", (E, NKV * HD), wtype, mat(E, NKV * HD, wtype)),
            (p + "attn_output.weight", (NH * HD, E), wtype, mat(NH * HD, E, wtype)),
            (p + "ffn_norm.weight", (E,), T_F32, norm()),
            (p + "ffn_gate.weight", (E, F), wtype, mat(E, F, wtype)),
            (p + "ffn_up.weight", (E, F), wtype, mat(E, F, wtype)),
            (p + "ffn_down.weight", (F, E), wtype, mat(F, E, wtype)),
        ]
    kvs = [
        kv_str("general.architecture", "llama"),
        kv_u32("llama.context_length", 64),
        kv_u32("llama.embedding_length", E),
        kv_u32("llama.block_count", L),
        kv_u32("llama.feed_forward_length", F),
        kv_u32("llama.attention.head_count", NH),
        kv_u32("llama.attention.head_count_kv", NKV),
        kv_u32("llama.rope.dimension_count", HD),
        kv_f32("llama.attention.layer_norm_rms_epsilon", 1e-5),
        kv_f32("llama.rope.freq_base", 10000.0),
    ] + tiny_vocab_kvs()
    return gguf(kvs, tensors)


def tiny_clip(proj, wtype, feature_layer=None, E=16, L=2):
    """A tiny mmproj (golden/mm/README.md lists the keys and tensors of real ones): n_embd E, 2 heads,
    n_ff E, L blocks, patch 2; mlp: class and position embeddings for 3x3 patches, mm.0 (E -> 32),
    mm.2 (32 -> 32); qwen2vl_merger: two patch kernels, post-LN, mm.0 (4E -> 32), mm.2 (32 -> 32);
    qwen2.5vl_merger: as qwen2vl_merger with n_ff E + 8, RMSNorm weights without biases, gated SiLU FFNs,
    window attention every other block (n_wa_pattern 2; llama.cpp's windows of 112 pixels);
    gemma3: SigLIP (patch bias, position embeddings for 4x4 patches, tanh GELU, post-LN), pooled 2x2
    (scale_factor 2), mm.soft_emb_norm (E) and mm.input_projection (32, E)."""
    rng = random.Random(17)
    q25 = proj == "qwen2.5vl_merger"
    F, P = E + 8 if q25 else E, 2

    def vec(n, scale=0.1, base=0.0):
        return struct.pack("<%df" % n, *[base + rng.uniform(-scale, scale) for _ in range(n)])

    def mat(ne0, ne1, t=wtype):
        vals = [rng.uniform(-0.3, 0.3) for _ in range(ne0 * ne1)]
        if t == T_F16:
            return f16_bytes(vals)
        if t == T_Q8_0:
            return q8_0_bytes(vals)
        return struct.pack("<%df" % len(vals), *vals)

    qwen, gemma = proj in ("qwen2vl_merger", "qwen2.5vl_merger"), proj == "gemma3"
    kern = [("v.patch_embd.weight", (P, P, 3, E), T_F32, mat(P * P * 3, E, T_F32))]
    if gemma:
        tensors = kern + [("v.patch_embd.bias", (E,), T_F32, vec(E)),
                          ("v.position_embd.weight", (E, 16), T_F32, mat(E, 16, T_F32)),
                          ("v.post_ln.weight", (E,), T_F32, vec(E, 0.1, 1.0)), ("v.post_ln.bias", (E,), T_F32, vec(E))]
    elif qwen:
        kern.append(("v.patch_embd.weight.1", (P, P, 3, E), T_F32, mat(P * P * 3, E, T_F32)))
        tensors = kern + [("v.post_ln.weight", (E,), T_F32, vec(E, 0.1, 1.0))]
        if not q25:
            tensors.append(("v.post_ln.bias", (E,), T_F32, vec(E)))
    else:
        tensors = kern + [("v.class_embd", (E,), T_F32, vec(E, 0.5)),
                          ("v.position_embd.weight", (E, 10), T_F32, mat(E, 10, T_F32)),
                          ("v.pre_ln.weight", (E,), T_F32, vec(E, 0.1, 1.0)), ("v.pre_ln.bias", (E,), T_F32, vec(E))]
    for il in range(L):
        b = "v.blk.%d." % il
        for name in ("attn_q", "attn_k", "attn_v", "attn_out"):
            tensors += [(b + name + ".weight", (E, E), wtype, mat(E, E)), (b + name + ".bias", (E,), T_F32, vec(E))]
        if q25:
            tensors += [(b + "ln1.weight", (E,), T_F32, vec(E, 0.1, 1.0)), (b + "ln2.weight", (E,), T_F32, vec(E, 0.1, 1.0)),
                        (b + "ffn_gate.weight", (E, F), wtype, mat(E, F)), (b + "ffn_gate.bias", (F,), T_F32, vec(F))]
        else:
            tensors += [(b + "ln1.weight", (E,), T_F32, vec(E, 0.1, 1.0)), (b + "ln1.bias", (E,), T_F32, vec(E)),
                        (b + "ln2.weight", (E,), T_F32, vec(E, 0.1, 1.0)), (b + "ln2.bias", (E,), T_F32, vec(E))]
        tensors += [(b + "ffn_up.weight", (E, F), wtype, mat(E, F)), (b + "ffn_up.bias", (F,), T_F32, vec(F)),
                    (b + "ffn_down.weight", (F, E), wtype, mat(F, E)), (b + "ffn_down.bias", (E,), T_F32, vec(E))]
    n_in = 4 * E if qwen else E * (len(feature_layer) if feature_layer else 1)
    if gemma:
        tensors += [("mm.soft_emb_norm.weight", (E,), T_F32, vec(E, 0.1, 1.0)),
                    ("mm.input_projection.weight", (32, E), wtype, mat(32, E))]
    else:
        tensors += [("mm.0.weight", (n_in, 32), wtype, mat(n_in, 32)), ("mm.0.bias", (32,), T_F32, vec(32)),
                    ("mm.2.weight", (32, 32), wtype, mat(32, 32)), ("mm.2.bias", (32,), T_F32, vec(32))]
    kvs = [
        kv_str("general.architecture", "clip"),
        kv("clip.has_vision_encoder", BOOL, b"\x01"),
        kv_str("clip.projector_type", proj),
        kv_u32("clip.vision.embedding_length", E),
        kv_u32("clip.vision.feed_forward_length", F),
        kv_u32("clip.vision.block_count", L),
        kv_u32("clip.vision.attention.head_count", 2),
        kv_f32("clip.vision.attention.layer_norm_epsilon", 1e-5),
        kv_u32("clip.vision.patch_size", P),
    ]
    if feature_layer is not None:
        kvs.append(kv_arr("clip.vision.feature_layer", I32, feature_layer))
    if q25:
        kvs += [kv("clip.use_silu", BOOL, b"\x01"), kv_u32("clip.vision.n_wa_pattern", 2)]
    if gemma:
        kvs += [kv("clip.use_gelu", BOOL, b"\x01"), kv_u32("clip.vision.projector.scale_factor", 2)]
    return gguf(kvs, tensors)


def all_types():
    kvs = [
        kv("u8", U8, b"\x07"), kv("i8", I8, b"\xfe"), kv("u16", U16, struct.pack("<H", 65535)),
        kv("i16", I16, struct.pack("<h", -3)), kv_u32("general.alignment", 64), kv("i32", I32, struct.pack("<i", -5)),
        kv_f32("f32", 0.5), kv("b", BOOL, b"\x01"), kv_str("s", "text"), kv("u64", U64, struct.pack("<Q", 2**63)),
        kv("i64", I64, struct.pack("<q", -(2**40))), kv("f64", F64, struct.pack("<d", -2.5)),
        kv_arr("arr.u8", U8, [1, 2, 3]), kv_arr("arr.str", STR, ["x", "", "yz"]),
        kv("arr.nested", ARR, struct.pack("<IQ", ARR, 2) + struct.pack("<IQ", U8, 1) + b"\x01"
           + struct.pack("<IQ", STR, 1) + gstr("deep")),
    ]
    tensors = [("a", (64,), T_F32, b"\0" * 256), ("b", (32, 2), T_F16, b"\0" * 128), ("e", (0, 5), T_F32, b""),
               ("q", (32, 1, 1, 2), T_Q8_0, b"\0" * 68)]
    return gguf(kvs, tensors, align=64)


def read_kvs(path):
    """The raw bytes of each key-value pair of a GGUF file, with its key."""
    b = open(path, "rb").read()
    n_kv = struct.unpack_from("<Q", b, 16)[0]
    pos = 24

    def skip(t, pos):
        if t == STR:
            return pos + 8 + struct.unpack_from("<Q", b, pos)[0]
        if t == ARR:
            et, n = struct.unpack_from("<IQ", b, pos)
            pos += 12
            for _ in range(n):
                pos = skip(et, pos)
            return pos
        return pos + {U8: 1, I8: 1, U16: 2, I16: 2, U32: 4, I32: 4, F32: 4, BOOL: 1, U64: 8, I64: 8, F64: 8}[t]

    out = []
    for _ in range(n_kv):
        start = pos
        klen = struct.unpack_from("<Q", b, pos)[0]
        key = b[pos + 8:pos + 8 + klen].decode()
        pos += 8 + klen
        t = struct.unpack_from("<I", b, pos)[0]
        pos = skip(t, pos + 4)
        out.append((key, b[start:pos]))
    return b, out


def jinja_seeds():
    """Selector byte: even = the rest is a template rendered against conversation (s >> 1) % 6; odd =
    the rest is JSON messages rendered with template (s >> 1) % n (tests/fuzz/fuzz_jinja.c)."""
    import json
    d = os.path.join(ROOT, "golden", "chat-templates")
    names = [n for n in sorted(os.listdir(d))
             if not n.startswith(".") and os.path.exists(os.path.join(d, n, "template.jinja"))]
    out = {}
    for i, n in enumerate(names):
        src = open(os.path.join(d, n, "template.jinja"), "rb").read()
        if len(src) <= 4096:  # the smaller half keeps the corpus small; the rest is reached by mode 1
            out["tmpl-%s.bin" % n] = bytes([(i % 6) * 2]) + src
    cases = json.load(open(os.path.join(d, "cases.json")))
    for k, case in enumerate(cases):
        ctx = case["context"]
        body = {"messages": ctx["messages"], "add_generation_prompt": ctx.get("add_generation_prompt", True)}
        if "tools" in ctx:
            body["tools"] = ctx["tools"]
        for idx in range(k, len(names) + 55, 11):  # templates, then built-in formats from index len(names)
            if idx < 128:
                out["msgs-%s-%d.bin" % (case["id"], idx)] = bytes([1 | idx << 1]) + json.dumps(body).encode()
    return out


def request_seeds():
    """Route byte (chat, completions, responses, embeddings, tokenize, detokenize, models, rerank;
    12 messages, 13 count_tokens; 14 a WebSocket message) then the body (tests/fuzz/fuzz_request.c)."""
    import base64
    import json
    png = open(os.path.join(HERE, "..", "..", "golden", "mm", "image.png"), "rb").read()
    png_b64 = base64.b64encode(png).decode()
    png_cut_b64 = base64.b64encode(png[:1000]).decode()
    bodies = [
        ("chat", 0, {"model": "stories260K.gguf", "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "Hello"}]}],
            "max_tokens": 4, "temperature": 0, "stop": ["\n", "."], "logit_bias": {"5": -100},
            "logprobs": True, "top_logprobs": 2, "stream": True, "stream_options": {"include_usage": True}}),
        ("chat-tools", 0, {"messages": [{"role": "user", "content": "Weather?"},
                                        {"role": "assistant", "content": None, "tool_calls": [
                                            {"type": "function", "function": {"name": "w", "arguments": "{}"}}]},
                                        {"role": "tool", "content": "sunny"}],
                           "tools": [{"type": "function", "function": {"name": "w", "parameters": {}}}],
                           "tool_choice": "auto", "n": 2, "seed": 7, "response_format": {"type": "text"}}),
        ("completions", 1, {"prompt": "Once upon a time", "max_tokens": 8, "n": 2, "echo": True, "logprobs": 2,
                            "seed": 42, "top_k": 40, "top_p": 0.9, "min_p": 0.05, "presence_penalty": 0.5,
                            "frequency_penalty": 0.5, "user": "u"}),
        ("completions-ids", 1, {"prompt": [[1, 2, 3], [4, 5], "text"], "stream": True, "stop": "x"}),
        ("completions-suffix", 1, {"prompt": ["a", "b"], "suffix": "x", "max_completion_tokens": 3}),
        ("responses", 2, {"instructions": "Be kind.", "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hi"}]}],
            "max_output_tokens": 5, "stream": True}),
        ("responses-text", 2, {"input": "Tell a story.", "temperature": 1.5}),
        ("chat-image", 0, {"messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "data:image/png;base64," + png_b64}},
            {"type": "text", "text": "Describe:"}]}], "max_tokens": 8, "temperature": 0}),
        ("chat-image-cut", 0, {"messages": [{"role": "user", "content": [
            {"type": "text", "text": "Look:"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64," + png_cut_b64}}]}]}),
        ("chat-image-url", 0, {"messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
            {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,@@=="}},
            {"type": "image_url", "image_url": "data:,"}]}]}),
        ("responses-image", 2, {"input": [{"type": "message", "role": "user", "content": [
            {"type": "input_image", "image_url": "data:image/png;base64," + png_b64},
            {"type": "input_text", "text": "What is it?"}]}]}),
        ("native-image", 8, {"prompt": {"prompt_string": "<__media__>\nDescribe:", "multimodal_data": [png_b64]},
                             "n_predict": 8, "temperature": 0}),
        ("native-image-bad", 8, {"prompt": ["a", {"prompt_string": "<__media__><__media__>",
                                                  "multimodal_data": [png_cut_b64, "@@=="]},
                                            {"prompt_string": [1, "x"]}, {"images": []}]}),
        ("messages-image", 12, {"max_tokens": 8, "messages": [{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png_b64}},
            {"type": "text", "text": "Describe:"}]}]}),
        ("messages-image-bad", 12, {"max_tokens": 8, "messages": [{"role": "user", "content": [
            {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
            {"type": "image", "source": {"type": "base64", "media_type": "image/gif", "data": png_cut_b64}},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "@@=="}}]}]}),
        ("count-tokens-image", 13, {"messages": [{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png_b64}},
            {"type": "text", "text": "Describe:"}]}]}),
        ("embeddings", 3, {"model": "stories260K.gguf", "input": ["hello", "world"], "encoding_format": "float"}),
        ("embeddings-ids", 3, {"input": [1, 2, 3], "encoding_format": "base64"}),
        ("tokenize", 4, {"content": "Hello <s> world \u00e9", "add_special": True, "parse_special": True,
                         "with_pieces": True}),
        ("detokenize", 5, {"tokens": [1, 100, 200, 300]}),
        ("rerank", 7, {"model": "m", "query": "a dog", "documents": ["the dog ran", "", "a cat"], "top_n": 2}),
        ("rerank-tei", 7, {"query": "a dog", "texts": ["the dog ran", "a cat"], "return_text": True}),
        ("rerank-huge-top-n", 7, {"query": "a", "documents": ["t"], "top_n": 2e89}),
        ("messages", 12, {"model": "m", "max_tokens": 8, "system": [{"type": "text", "text": "Be brief."}],
                          "messages": [{"role": "user", "content": "Weather?"},
                                       {"role": "assistant", "content": [
                                           {"type": "thinking", "thinking": "Look it up.", "signature": ""},
                                           {"type": "text", "text": "Let me check."},
                                           {"type": "tool_use", "id": "toolu_1", "name": "w", "input": {"c": 1}}]},
                                       {"role": "user", "content": [
                                           {"type": "tool_result", "tool_use_id": "toolu_1",
                                            "content": [{"type": "text", "text": "sunny"}]},
                                           {"type": "text", "text": "Thanks", "cache_control": {"type": "ephemeral"}}]}],
                          "tools": [{"name": "w", "description": "d", "input_schema": {"type": "object"}}],
                          "tool_choice": {"type": "auto"}, "stop_sequences": ["\n"], "temperature": 0.5,
                          "top_p": 0.9, "top_k": 40, "stream": True, "metadata": {"user_id": "u"},
                          "thinking": {"type": "disabled"}}),
        ("count-tokens", 13, {"model": "m", "system": "Be brief.", "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Hi"}, {"type": "image", "source": {}}]}],
            "tool_choice": {"type": "tool", "name": "w"}}),
    ]
    out = {"%s.bin" % name: bytes([route]) + json.dumps(b).encode() for name, route, b in bodies}
    out["models.bin"] = bytes([6]) + b"stories260K.gguf"
    # model selection with several models (the harness's table has "alpha" and "beta")
    out["model-select.bin"] = bytes([4]) + json.dumps({"model": "beta", "content": "Hello"}).encode()
    out["models-alpha.bin"] = bytes([6]) + b"alpha"
    # WebSocket messages (GET /v1/ws): the envelope around bodies of the streaming routes
    ws = {"chat": "/v1/chat/completions", "completions": "/v1/completions", "responses": "/v1/responses",
          "messages": "/v1/messages"}
    for name, route, b in bodies:
        if name in ws:
            out["ws-%s.bin" % name] = bytes([14]) + json.dumps({"route": ws[name], "body": b}).encode()
    out["ws-native-completion.bin"] = bytes([14]) + json.dumps({"route": "/completion", "body": {
        "prompt": "Once upon a time", "n_predict": 8, "n_probs": 2, "stream": True}}).encode()
    out["webui-app.bin"] = bytes([15]) + b"app.js"
    out["webui-missing.bin"] = bytes([15]) + b"../index.html"
    out["ws-unknown-field.bin"] = bytes([14]) + b'{"route": "/completion", "body": {}, "id": 1}'
    return out


def grammar_seeds():
    gdir = os.path.join(ROOT, "golden", "grammars")
    texts = {
        "json": b'{"a": [1, 2.5e3, "x\\u00e9"], "b": {"c": null}}',
        "json_arr": b'[\n{"k": true},\n"s"\n]',
        "arithmetic": b"x = (1 + y2) * 3\n",
        "c": b"int main() { return a + 1; }",
        "chess": b"1. e4 e5 2. Nf3 Nc6 ",
        "list": b"- one\n- two\n",
        "english": b"Hello there, friend.",
        "japanese": "\u3053\u3093\u306b\u3061\u306f \u30c6\u30b9\u30c8".encode("utf-8"),
        "sentence": b"a dog ran.",
    }
    seeds = {}
    for name, text in texts.items():
        with open(os.path.join(gdir, name + ".gbnf"), "rb") as f:
            seeds[name + ".bin"] = f.read() + b"\0" + text
    seeds["tokens.bin"] = b'root ::= <[1]> body !<[2]>* <s>\nbody ::= [a-z]{2,5} ("," [^\\n]?)*\n\0abc,de'
    return seeds


def split_seed(model, max_tensors):
    """The parts of model split by tests/cli/split_gguf.py, joined by the split harness's separator."""
    import tempfile
    sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))
    import split_gguf
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "in.gguf")
        with open(src, "wb") as f:
            f.write(model)
        split_gguf.split(src, os.path.join(d, "fuzz"), max_tensors)
        parts = sorted(n for n in os.listdir(d) if n.startswith("fuzz-"))
        return b"\nOXLPART".join(open(os.path.join(d, n), "rb").read() for n in parts)


def chat_parse_seeds():
    """[selector][reply] inputs (tests/fuzz/fuzz_chat_parse.c): the replies of llama.cpp's parse
    expectations (golden/chat-parse/cases.json), each with the selector of its template's format
    and the case's options (reasoning format, tools, partial)."""
    import json
    # the selector's template slot for each golden template's format, as fuzz_chat_parse.c lists them
    slot = {"Qwen3.5-4B": 15, "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16": 15, "Qwen3-Coder": 15, "Qwen-QwQ-32B": 3,
            "CohereForAI-c4ai-command-r7b-12-2024-tool_use": 12, "google-gemma-2-2b-it": 0,
            "ibm-granite-granite-3.3-2B-Instruct": 13, "deepseek-ai-DeepSeek-V3.1": 8,
            "mistralai-Mistral-Nemo-Instruct-2407": 6, "Mistral-Small-3.2-24B-Instruct-2506": 6,
            "unsloth-mistral-Devstral-Small-2507": 6, "mistralai-Ministral-3-14B-Reasoning-2512": 6,
            "meetkai-functionary-medium-v3.1": 9,
            "meetkai-functionary-medium-v3.2": 10, "fireworks-ai-llama-3-firefunction-v2": 11,
            "openai-gpt-oss-120b": 14, "meta-llama-Llama-3.1-8B-Instruct": 5,
            "meta-llama-Llama-3.2-3B-Instruct": 5,
            "CohereForAI-c4ai-command-r-plus-tool_use": 4, "meta-llama-Llama-3.3-70B-Instruct": 5}
    with open(os.path.join(ROOT, "golden", "chat-parse", "cases.json"), encoding="utf-8") as f:
        cases = json.load(f)
    seeds = {}
    for i, c in enumerate(cases):
        t = c["template"]
        s = slot.get(t, 7 if "R1" in t or "deepseek-r1" in t else 2)
        s |= (0x10 if c["reasoning_format"] == "none" else 0) | (0x20 if c["tools"] is not False else 0) | \
            (0x40 if c["partial"] else 0)
        seeds["case%02d.bin" % i] = bytes([s]) + c["input"].encode("utf-8")
    seeds["python-tag.bin"] = bytes([0x25]) + b'Hi<|python_tag|>brave_search.call(query="a \\"b\\"", n=3)'
    seeds["llama-json.bin"] = bytes([0x25]) + b'{"type": "function", "name": "f", "parameters": {"x": [1, {"y": null}]}}'
    seeds["generic.bin"] = bytes([0x20]) + b'{"tool_calls": [{"name": "a", "arguments": {}, "id": "7"}, {"name": "b"}]}'
    return seeds


def mmproj_seeds():
    """The keys of golden/mm/'s mmproj files (no tensors), each with three image sizes and prompts."""
    out = {}
    prompts = [(b"<__media__>\nDescribe:", 1), (b"a <__media__> b <__media__>", 2), (b"no marker", 1)]
    for name in ("llava15", "llava-next", "qwen2vl", "qwen25vl", "gemma3"):
        _, kvs = read_kvs(os.path.join(ROOT, "golden", "mm", name + ".mmproj.gguf"))
        meta = gguf([k for _, k in kvs], [])
        for i, (prompt, n_images) in enumerate(prompts):
            head = struct.pack("<BBBH", 43 + 17 * i, 29 + 5 * i, n_images | 4 * (i == 2) | 8 | 16, len(prompt))
            out["%s-%d.bin" % (name, i)] = head + prompt + meta
    return out


def main():
    stories = os.path.join(ROOT, "models", "stories260K.gguf")
    raw, kvs = read_kvs(stories)
    stories_vocab = gguf([k for key, k in kvs if key.startswith("tokenizer.")], [])
    seeds = {
        "gguf": {
            "tiny-llama-q8_0.gguf": tiny_llama(T_Q8_0),
            "all-types.gguf": all_types(),
            "stories260K-vocab.gguf": stories_vocab,
            "stories260K-head16k.gguf": raw[:16384],
        },
        "model": {
            "tiny-llama-f32.gguf": tiny_llama(T_F32, E=16),
            "tiny-llama-f16.gguf": tiny_llama(T_F16, E=16),
            "tiny-llama-q8_0.gguf": tiny_llama(T_Q8_0),
            "stories260K-head16k.gguf": raw[:16384],
        },
        "vocab": {},
    }
    texts = {
        "plain": b"Once upon a time, there was a little dog.",
        "special": b"<s>ab a b</s> <|im_end|>\nA\n\n  c",
        "utf8": "caf\u00e9 \u2581 \U0001F600 \xff\xfe".encode("utf-8", "surrogatepass") + b"\xc3",
    }
    tiny_vocab = gguf(tiny_vocab_kvs(), [])
    for vname, v in (("stories", stories_vocab), ("tiny", tiny_vocab)):
        for tname, t in texts.items():
            seeds["vocab"]["%s-%s.bin" % (vname, tname)] = struct.pack("<I", len(v)) + v + t
    for model, pre in OTHER_VOCABS:
        v = gguf(other_vocab_kvs(model, pre), [])
        seeds["vocab"]["%s-%s-special.bin" % (model, pre or "none")] = struct.pack("<I", len(v)) + v + texts["special"]
    seeds["split"] = {
        "tiny-llama-q8_0-by8.bin": split_seed(tiny_llama(T_Q8_0), 8),
        "tiny-llama-q8_0-by12.bin": split_seed(tiny_llama(T_Q8_0), 12),
    }
    seeds["clip"] = {
        "mlp-f32.gguf": tiny_clip("mlp", T_F32),
        "mlp-f16-features.gguf": tiny_clip("mlp", T_F16, feature_layer=[1, 2]),
        "mlp-q8_0.gguf": tiny_clip("mlp", T_Q8_0, E=32, L=1),
        "qwen2vl-f32.gguf": tiny_clip("qwen2vl_merger", T_F32),
        "qwen25vl-f32.gguf": tiny_clip("qwen2.5vl_merger", T_F32, E=8),
        "gemma3-f32.gguf": tiny_clip("gemma3", T_F32),
        "gemma3-f16.gguf": tiny_clip("gemma3", T_F16),
    }
    seeds["jinja"] = jinja_seeds()
    seeds["request"] = request_seeds()
    seeds["grammar"] = grammar_seeds()
    seeds["chat_parse"] = chat_parse_seeds()
    seeds["mmproj"] = mmproj_seeds()
    for harness, files in seeds.items():
        d = os.path.join(HERE, "corpus", harness)
        os.makedirs(d, exist_ok=True)
        for name, data in files.items():
            assert len(data) <= 32768, (name, len(data))
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
