#!/usr/bin/env python3
"""Writes a tiny llama GGUF with fill-in-the-middle tokens, for /infill.

usage: make_fim_model.py OUT.gguf

The model is a bigram table (as make_toolcall_model.py's): one layer with zero attention and
feed-forward weights, so the hidden state is the embedding of the current token. Every token but
two embeds to direction 0, whose next token is the end of text (</s>); <|fim_middle|> has
direction 1, followed by the token "return a + b", which has direction 2, followed by </s>. So a
fill-in-the-middle prompt (ending in <|fim_middle|>) is answered "return a + b" and the end of
text. The vocabulary is SentencePiece-style (<unk>, <s>, </s>, 256 byte tokens) plus the FIM
tokens <|fim_prefix|>, <|fim_suffix|>, <|fim_middle|>, <|fim_repo|>, <|file_sep|>, named by the
tokenizer.ggml.fim_*_token_id keys. Layout of GGUF: ggml docs/gguf.md.
"""
import os
import struct
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from gguf_kv import F32, I32, STR, T_F32, gstr, kv_arr, kv_f32, kv_str, kv_u32  # noqa: E402

FIM = ["<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>", "<|fim_repo|>", "<|file_sep|>"]
PRE = 259
MID = PRE + 2
REPLY = PRE + len(FIM)  # "return a + b"
V = REPLY + 1
E = 4


def f32(vals):
    return struct.pack("<%df" % len(vals), *vals)


def main():
    tokens = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)] + FIM + ["return a + b"]
    types = [2, 3, 3] + [6] * 256 + [3] * len(FIM) + [1]  # unknown 2, control 3, byte 6, normal 1
    scores = [0.0] * 259 + [0.0] * len(FIM) + [-1000.0]
    embd = [0.0] * (E * V)
    for tok in range(V):
        embd[tok * E + (1 if tok == MID else 2 if tok == REPLY else 0)] = 1.0
    out = [0.0] * (E * V)
    out[2 * E + 0] = 10.0  # direction 0 -> </s>
    out[REPLY * E + 1] = 10.0  # <|fim_middle|> -> the reply
    out[2 * E + 2] = 10.0  # the reply -> </s>
    zeros = [0.0] * (E * E)
    ones = [1.0] * E
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
        ("blk.0.ffn_gate.weight", (E, E), f32(zeros)),
        ("blk.0.ffn_up.weight", (E, E), f32(zeros)),
        ("blk.0.ffn_down.weight", (E, E), f32(zeros)),
    ]
    kvs = [
        kv_str("general.architecture", "llama"),
        kv_str("general.name", "fim-bigram"),
        kv_u32("llama.context_length", 512),
        kv_u32("llama.embedding_length", E),
        kv_u32("llama.block_count", 1),
        kv_u32("llama.feed_forward_length", E),
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
        kv_u32("tokenizer.ggml.fim_pre_token_id", PRE),
        kv_u32("tokenizer.ggml.fim_suf_token_id", PRE + 1),
        kv_u32("tokenizer.ggml.fim_mid_token_id", MID),
        kv_u32("tokenizer.ggml.fim_rep_token_id", PRE + 3),
        kv_u32("tokenizer.ggml.fim_sep_token_id", PRE + 4),
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
