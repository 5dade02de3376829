#!/usr/bin/env python3
"""Writes a tiny llama GGUF whose greedy reply to any prompt is one tool call.

usage: make_toolcall_model.py OUT.gguf [mistral]

The model is a bigram table: its one layer has zero attention and feed-forward weights, so the
hidden state is the embedding of the current token. Every ordinary token (the byte tokens and
specials, all that a prompt is made of) embeds to direction 0; each token of the reply below has
a direction of its own, and the output matrix maps each direction to the next token of the reply:

    any prompt -> "Let me check." -> "<tool_call>\\n" -> "{\\"name\\": \\"get_weather\\", "
               -> "\\"arguments\\": {\\"city\\": " -> "\\"Paris\\", \\"unit\\": \\"celsius\\"}}"
               -> "\\n</tool_call>" -> end of text (</s>)

"<tool_call>\\n" also follows a prompt, with a smaller logit than "Let me check.": a logit_bias of
-100 on that token makes the reply the call alone. The reply's tokens are ordinary vocabulary
entries that no merge of smaller pieces can form, so no prompt tokenizes to them. The vocabulary
is SentencePiece-style (<unk>, <s>, </s>, 256 byte tokens), without a chat template: the server
renders ChatML. Layout of GGUF: ggml docs/gguf.md.

With "mistral" the call is Mistral Nemo's (served with that template), [TOOL_CALLS] a control token:
    any prompt -> "Let me check." -> "[TOOL_CALLS]" -> "[{\"name\": \"get_weather\", "
               -> "\"arguments\": {\"city\": " -> "\"Paris\", \"unit\": \"celsius\"}, "
               -> "\"id\": \"abc123def\"}]" -> end of text (</s>)
"""
import os
import struct
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from gguf_kv import ARR, F32, I32, STR, T_F32, U32, gstr, kv, kv_arr, kv_f32, kv_str, kv_u32  # noqa: E402


REPLY = ["Let me check.", "<tool_call>\n", '{"name": "get_weather", ', '"arguments": {"city": ',
         '"Paris", "unit": "celsius"}}', "\n</tool_call>"]
if sys.argv[2:] == ["mistral"]:
    REPLY = ["Let me check.", "[TOOL_CALLS]", '[{"name": "get_weather", ', '"arguments": {"city": ',
             '"Paris", "unit": "celsius"}, ', '"id": "abc123def"}]']
# ids: 0 <unk>, 1 <s>, 2 </s>, 3..258 the bytes, 259.. the reply
FIRST = 259
V = FIRST + len(REPLY)
E = 8  # direction 0 for every ordinary token, 1..6 for the reply's tokens


def f32(vals):
    return struct.pack("<%df" % len(vals), *vals)


def main():
    tokens = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)] + REPLY
    types = [2, 3, 3] + [6] * 256 + [1] * len(REPLY)  # unknown 2, control 3, byte 6, normal 1
    if REPLY[1] == "[TOOL_CALLS]":
        types[FIRST + 1] = 3  # a control token, as in Mistral's vocabularies
    scores = [0.0] * 259 + [-1000.0] * len(REPLY)

    def direction(tok):
        return tok - FIRST + 1 if tok >= FIRST else 0

    embd = [0.0] * (E * V)  # ne = (E, V): row tok holds its embedding
    for tok in range(V):
        embd[tok * E + direction(tok)] = 1.0
    out = [0.0] * (E * V)  # logit[tok] = out[tok] . rms_norm(embedding of the current token)
    out[FIRST * E + 0] = 10.0  # after any prompt: "Let me check."
    out[(FIRST + 1) * E + 0] = 5.0  # ... or, second, the call itself
    for i in range(1, len(REPLY)):
        out[(FIRST + i) * E + i] = 10.0  # reply token i follows reply token i - 1
    out[2 * E + len(REPLY)] = 10.0  # </s> follows the last one
    zeros = [0.0] * (E * E)
    ones = [1.0] * E
    F = E
    tensors = [
        ("token_embd.weight", (E, V), f32(embd)),
        ("output_norm.weight", (E,), f32(ones)),
        ("output.weight", (E, V), f32(out)),
        ("blk.0.attn_norm.weight", (E,), f32(ones)),
        ("blk.0.attn_q.weight", (E, E), f32(zeros)),
        ("blk.0.attn_k.weight", (E, E), f32(zeros)),
        ("blk.0.attn_v.weight", (E, E), f32(zeros)),
        ("blk.0.attn_output.weight", (E, E), f32(zeros)),
        ("blk.0.ffn_norm.weight", (E,), f32(ones)),
        ("blk.0.ffn_gate.weight", (E, F), f32(zeros)),
        ("blk.0.ffn_up.weight", (E, F), f32(zeros)),
        ("blk.0.ffn_down.weight", (F, E), f32(zeros)),
    ]
    kvs = [
        kv_str("general.architecture", "llama"),
        kv_str("general.name", "toolcall-bigram"),
        kv_u32("llama.context_length", 512),
        kv_u32("llama.embedding_length", E),
        kv_u32("llama.block_count", 1),
        kv_u32("llama.feed_forward_length", F),
        kv_u32("llama.attention.head_count", 2),
        kv_u32("llama.attention.head_count_kv", 2),
        kv_u32("llama.rope.dimension_count", E // 2),
        kv_f32("llama.attention.layer_norm_rms_epsilon", 1e-5),
        kv_f32("llama.rope.freq_base", 10000.0),
        kv_str("tokenizer.ggml.model", "llama"),
        kv_arr("tokenizer.ggml.tokens", STR, tokens),
        kv_arr("tokenizer.ggml.scores", F32, scores),
        kv_arr("tokenizer.ggml.token_type", I32, types),
        kv_u32("tokenizer.ggml.bos_token_id", 1),
        kv_u32("tokenizer.ggml.eos_token_id", 2),
        kv_u32("tokenizer.ggml.unknown_token_id", 0),
    ]
    align = 32
    blob = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs)) + b"".join(kvs)
    data, infos = b"", b""
    for name, ne, raw in tensors:
        data += b"\0" * (-len(data) % align)
        infos += gstr(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<q", n) for n in ne)
        infos += struct.pack("<IQ", T_F32, len(data))
        data += raw
    blob += infos
    blob += b"\0" * (-len(blob) % align)
    with open(sys.argv[1], "wb") as f:
        f.write(blob + data)


if __name__ == "__main__":
    main()
