#!/usr/bin/python3
"""Writes the tiny LoRA adapters and control vector of golden/lora/ for the models of golden/arch/,
in the layout llama.cpp's convert_lora_to_gguf.py and its control-vector generator write. Needs numpy
and llama.cpp's gguf-py on PYTHONPATH. Run from the project root: python3 golden/lora/make_adapters.py

Random values: numpy default_rng(seed) normal draws, seeds below; A scaled 1/sqrt(ne0), B 0.5/sqrt(rank)
(large enough to move the logits well past the golden bound)."""
import numpy as np
import gguf

OUT = "golden/lora/"


def lora(path, arch, alpha, seed, targets, dtype=np.float32):
    rng = np.random.default_rng(seed)
    w = gguf.GGUFWriter(OUT + path, arch)
    w.add_string("general.type", "adapter")
    w.add_string("adapter.type", "lora")
    w.add_float32("adapter.lora.alpha", alpha)
    for name, ne0, ne1, rank in targets:
        # numpy shape (rows, cols) = ggml ne (ne0 = cols): lora_a ne [ne0, rank], lora_b ne [rank, ne1]
        a = (rng.standard_normal((rank, ne0)) / np.sqrt(ne0)).astype(dtype)
        b = (rng.standard_normal((ne1, rank)) * 0.5 / np.sqrt(rank)).astype(dtype)
        w.add_tensor(name + ".lora_a", a)
        w.add_tensor(name + ".lora_b", b)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def llama_targets(rank):
    t = []
    for il in range(2):
        p = "blk.%d." % il
        t += [(p + "attn_q.weight", 64, 64, rank), (p + "attn_k.weight", 64, 16, rank),
              (p + "attn_v.weight", 64, 16, rank), (p + "attn_output.weight", 64, 64, rank),
              (p + "ffn_gate.weight", 64, 160, rank), (p + "ffn_up.weight", 64, 160, rank),
              (p + "ffn_down.weight", 160, 64, rank)]
    return t + [("output.weight", 64, 512, rank)]


def qwen3_targets(rank):
    t = []
    for il in range(2):
        p = "blk.%d." % il
        t += [(p + "attn_q.weight", 64, 128, rank), (p + "attn_v.weight", 64, 64, rank),
              (p + "attn_output.weight", 128, 64, rank), (p + "ffn_down.weight", 160, 64, rank)]
    return t


# llama: every matrix but the embedding, rank 8, alpha 16 (scale alpha/rank = 2 times the user's)
lora("llama.lora-a.gguf", "llama", 16.0, 1901, llama_targets(8))
# llama: a second adapter, rank 16 (the gemm path of 2+ columns), alpha 0 (the user's scale alone), f16
lora("llama.lora-b.gguf", "llama", 0.0, 1902, llama_targets(16), np.float16)
# qwen3: attention q/v/output and ffn_down, rank 4, alpha 8
lora("qwen3.lora.gguf", "qwen3", 8.0, 1903, qwen3_targets(4))

# control vector for llama (n_embd 64, 2 layers: layer 1 is the only one that takes a direction)
rng = np.random.default_rng(1904)
w = gguf.GGUFWriter(OUT + "llama.cvec.gguf", "controlvector")
w.add_string("controlvector.model_hint", "llama")
w.add_uint32("controlvector.layer_count", 1)
w.add_tensor("direction.1", rng.standard_normal(64).astype(np.float32))
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()

# a second control vector with directions for layers 1 and 2 (n_embd 64: mamba, mamba2, jamba)
rng = np.random.default_rng(1906)
w = gguf.GGUFWriter(OUT + "cvec2.gguf", "controlvector")
w.add_string("controlvector.model_hint", "jamba")
w.add_uint32("controlvector.layer_count", 2)
w.add_tensor("direction.1", rng.standard_normal(64).astype(np.float32))
w.add_tensor("direction.2", rng.standard_normal(64).astype(np.float32))
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
