"""The one spec table: every ggml format, every ISA, every kernel op.

Everything the generator writes (type enum and traits, block structs, the kernel list, the CMake
sources with per-file flags, the tests) comes from the tables below. `validate()` stops the
generator on any inconsistency instead of letting it reach the C compiler.
"""

from dataclasses import dataclass, field

# C storage of a block field: (C type, bytes).
FIELD_TYPES = {
    "f16": ("uint16_t", 2),   # IEEE half, stored as bits
    "f32": ("float", 4),
    "u8": ("uint8_t", 1),
    "i8": ("int8_t", 1),
    "u16": ("uint16_t", 2),
    "i16": ("int16_t", 2),
}


@dataclass(frozen=True)
class Format:
    """One ggml type. `fields` is the block layout [(name, field type, count)] in memory order;
    scalar element types (f32, i8, …) have an empty layout and `elem` instead."""
    id: int
    name: str                 # ggml spelling: "q4_K"
    blck: int                 # elements per block
    size: int                 # bytes per block
    partner: str              # vec_dot_type (activation format paired in vec_dot)
    quantized: bool = True
    fields: tuple = ()
    elem: str = ""            # C type of one element, for block size 1 formats
    ops: tuple = ()           # kernel ops this format has: dequant, quant, vec_dot, gemm, swiglu, mad
    isas: tuple = ()          # ISAs with cells for this format (empty: every ISA)
    # The reference quantizer: oxl_quantize_row_<name>(x, y, ne0, imatrix) in src/quantize/, bytes
    # equal to ggml's quantize_row_<name>_ref / ggml_quantize_chunk (`oxillama quantize` writes the
    # format); imatrix: it uses importance weights when given them (ggml's quantize_<name> with
    # quant_weights), else it ignores them.
    quantizer: bool = False
    imatrix: bool = False
    # ggml_quantize_requires_imatrix: the quantizer cannot run without importance weights (ggml's
    # asserts; oxl_quantize_rows refuses a NULL imatrix).
    imatrix_required: bool = False
    # llama-quantize's tensor_requires_imatrix: a file whose tensors (other than token_embd and
    # output) get this format is refused without --imatrix.
    file_imatrix_required: bool = False
    # llama-quantize's tensor_type_fallback: the format a row that is not a multiple of this block
    # gets instead ("": none, the tensor is refused); its own fallback applies in turn (ggml_type
    # fallback to f16 when even that block does not fit is quant_mix.c's).
    fallback: str = ""
    # A KV-cache type (-ctk/-ctv, oxl_ctx_params.type_k/_v): rows stored through the quantizer and
    # read back through dequant/vec_dot (llama.cpp's set_rows and attention on that type).
    kv_cache: bool = False
    # Checked against llama.cpp's golden/quant/<name>.gguf (ctest golden-quant, the quantizer and
    # kernel tests, the cross-ISA runs) when it has ops or a quantizer.
    golden: bool = True
    tables: tuple = ()        # lookup tables of QUANT_TABLES its kernels and quantizer read

    @property
    def golden_file(self):
        """The name of its golden/quant file, or "" when it has none."""
        return f"{self.name}.gguf" if self.golden and (self.ops or self.quantizer) else ""


# ggml's type ids (ggml.h enum ggml_type); ids not listed here (4, 5, 31..33, 36..38) were
# removed from ggml and are not valid.
FORMATS = (
    Format(0, "f32", blck=1, size=4, partner="f32", quantized=False, elem="float",
           ops=("dequant", "quant", "vec_dot", "gemm", "swiglu", "mad", "sgemm_acc", "softmax"), quantizer=True,
           kv_cache=True, golden=False),
    Format(1, "f16", blck=1, size=2, partner="f16", quantized=False, elem="uint16_t",
           ops=("dequant", "quant", "vec_dot", "gemm", "mad", "mad_rows", "dot_rows"), quantizer=True,
           kv_cache=True),
    Format(2, "q4_0", blck=32, size=18, partner="q8_0", fields=(("d", "f16", 1), ("qs", "u8", 16)),
           ops=("dequant", "vec_dot"), quantizer=True, imatrix=True, kv_cache=True),
    Format(3, "q4_1", blck=32, size=20, partner="q8_1",
           fields=(("d", "f16", 1), ("m", "f16", 1), ("qs", "u8", 16)), ops=("dequant", "vec_dot"),
           quantizer=True, imatrix=True, kv_cache=True),
    Format(6, "q5_0", blck=32, size=22, partner="q8_0",
           fields=(("d", "f16", 1), ("qh", "u8", 4), ("qs", "u8", 16)), ops=("dequant", "vec_dot"),
           quantizer=True, imatrix=True, kv_cache=True),
    Format(7, "q5_1", blck=32, size=24, partner="q8_1",
           fields=(("d", "f16", 1), ("m", "f16", 1), ("qh", "u8", 4), ("qs", "u8", 16)),
           ops=("dequant", "vec_dot"), quantizer=True, imatrix=True, kv_cache=True),
    Format(8, "q8_0", blck=32, size=34, partner="q8_0", fields=(("d", "f16", 1), ("qs", "i8", 32)),
           ops=("dequant", "quant", "vec_dot"), quantizer=True, kv_cache=True),
    Format(9, "q8_1", blck=32, size=36, partner="q8_1",
           fields=(("d", "f16", 1), ("s", "f16", 1), ("qs", "i8", 32)), ops=("dequant", "quant"), quantizer=True),
    Format(10, "q2_K", blck=256, size=84, partner="q8_K",
           fields=(("scales", "u8", 16), ("qs", "u8", 64), ("d", "f16", 1), ("dmin", "f16", 1)),
           ops=("dequant", "vec_dot"), quantizer=True, imatrix=True, fallback="q4_0"),
    Format(11, "q3_K", blck=256, size=110, partner="q8_K",
           fields=(("hmask", "u8", 32), ("qs", "u8", 64), ("scales", "u8", 12), ("d", "f16", 1)),
           ops=("dequant", "vec_dot"), quantizer=True, imatrix=True, fallback="q4_0"),
    Format(12, "q4_K", blck=256, size=144, partner="q8_K",
           fields=(("d", "f16", 1), ("dmin", "f16", 1), ("scales", "u8", 12), ("qs", "u8", 128)),
           ops=("dequant", "vec_dot"), quantizer=True, imatrix=True, fallback="q5_0"),
    Format(13, "q5_K", blck=256, size=176, partner="q8_K",
           fields=(("d", "f16", 1), ("dmin", "f16", 1), ("scales", "u8", 12), ("qh", "u8", 32), ("qs", "u8", 128)),
           ops=("dequant", "vec_dot"), quantizer=True, imatrix=True, fallback="q5_1"),
    Format(14, "q6_K", blck=256, size=210, partner="q8_K",
           fields=(("ql", "u8", 128), ("qh", "u8", 64), ("scales", "i8", 16), ("d", "f16", 1)),
           ops=("dequant", "vec_dot"), quantizer=True, imatrix=True, fallback="q8_0"),
    Format(15, "q8_K", blck=256, size=292, partner="q8_K",
           fields=(("d", "f32", 1), ("qs", "i8", 256), ("bsums", "i16", 16)), ops=("dequant", "quant"),
           quantizer=True),
    Format(16, "iq2_xxs", blck=256, size=66, partner="q8_K", fields=(("d", "f16", 1), ("qs", "u16", 32)),
           ops=("dequant", "vec_dot"), tables=("iq2xxs_grid", "ksigns_iq2xs", "kmask_iq2xs"),
           quantizer=True, imatrix=True, imatrix_required=True, file_imatrix_required=True, fallback="iq4_nl"),
    Format(17, "iq2_xs", blck=256, size=74, partner="q8_K",
           fields=(("d", "f16", 1), ("qs", "u16", 32), ("scales", "u8", 8)),
           ops=("dequant", "vec_dot"), tables=("iq2xs_grid", "ksigns_iq2xs", "kmask_iq2xs"),
           quantizer=True, imatrix=True, imatrix_required=True, file_imatrix_required=True, fallback="iq4_nl"),
    Format(18, "iq3_xxs", blck=256, size=98, partner="q8_K", fields=(("d", "f16", 1), ("qs", "u8", 96)),
           ops=("dequant", "vec_dot"), tables=("iq3xxs_grid", "ksigns_iq2xs"), quantizer=True, imatrix=True,
           file_imatrix_required=True, fallback="iq4_nl"),
    Format(19, "iq1_s", blck=256, size=50, partner="q8_K",
           fields=(("d", "f16", 1), ("qs", "u8", 32), ("qh", "u16", 8)),
           ops=("dequant", "vec_dot"), tables=("iq1s_grid",), quantizer=True, imatrix=True,
           imatrix_required=True, file_imatrix_required=True, fallback="iq4_nl"),
    Format(20, "iq4_nl", blck=32, size=18, partner="q8_0", fields=(("d", "f16", 1), ("qs", "u8", 16)),
           ops=("dequant", "vec_dot"), tables=("kvalues_iq4nl",), quantizer=True, imatrix=True, kv_cache=True),
    Format(21, "iq3_s", blck=256, size=110, partner="q8_K",
           fields=(("d", "f16", 1), ("qs", "u8", 64), ("qh", "u8", 8), ("signs", "u8", 32), ("scales", "u8", 4)),
           ops=("dequant", "vec_dot"), tables=("iq3s_grid",), quantizer=True, imatrix=True, fallback="iq4_nl"),
    Format(22, "iq2_s", blck=256, size=82, partner="q8_K",
           fields=(("d", "f16", 1), ("qs", "u8", 64), ("qh", "u8", 8), ("scales", "u8", 8)),
           ops=("dequant", "vec_dot"), tables=("iq2s_grid", "kmask_iq2xs"),
           quantizer=True, imatrix=True, file_imatrix_required=True, fallback="iq4_nl"),
    Format(23, "iq4_xs", blck=256, size=136, partner="q8_K",
           fields=(("d", "f16", 1), ("scales_h", "u16", 1), ("scales_l", "u8", 4), ("qs", "u8", 128)),
           ops=("dequant", "vec_dot"), tables=("kvalues_iq4nl",), quantizer=True, imatrix=True,
           fallback="iq4_nl"),
    Format(24, "i8", blck=1, size=1, partner="f32", quantized=False, elem="int8_t"),
    Format(25, "i16", blck=1, size=2, partner="f32", quantized=False, elem="int16_t"),
    Format(26, "i32", blck=1, size=4, partner="f32", quantized=False, elem="int32_t"),
    Format(27, "i64", blck=1, size=8, partner="f32", quantized=False, elem="int64_t"),
    Format(28, "f64", blck=1, size=8, partner="f32", quantized=False, elem="double"),
    Format(29, "iq1_m", blck=256, size=56, partner="q8_K",
           fields=(("qs", "u8", 32), ("qh", "u8", 16), ("scales", "u8", 8)),
           ops=("dequant", "vec_dot"), tables=("iq1s_grid",), quantizer=True, imatrix=True,
           file_imatrix_required=True, fallback="iq4_nl"),
    Format(30, "bf16", blck=1, size=2, partner="bf16", quantized=False, elem="uint16_t",
           ops=("dequant", "quant", "vec_dot", "gemm"), quantizer=True, kv_cache=True),
    Format(34, "tq1_0", blck=256, size=54, partner="q8_K",
           fields=(("qs", "u8", 48), ("qh", "u8", 4), ("d", "f16", 1)), ops=("dequant", "vec_dot"), quantizer=True,
           fallback="q4_0"),
    Format(35, "tq2_0", blck=256, size=66, partner="q8_K", fields=(("qs", "u8", 64), ("d", "f16", 1)),
           ops=("dequant", "vec_dot"), quantizer=True, fallback="q4_0"),
    Format(39, "mxfp4", blck=32, size=17, partner="q8_0", fields=(("e", "u8", 1), ("qs", "u8", 16)),
           ops=("dequant", "vec_dot"), tables=("kvalues_fp4",), quantizer=True),
    Format(40, "nvfp4", blck=64, size=36, partner="q8_0", fields=(("d", "u8", 4), ("qs", "u8", 32)),
           ops=("dequant", "vec_dot"), tables=("kvalues_fp4",), quantizer=True),
    Format(41, "q1_0", blck=128, size=18, partner="q8_0", fields=(("d", "f16", 1), ("qs", "u8", 16)),
           ops=("dequant", "vec_dot"), quantizer=True),
    Format(42, "q2_0", blck=64, size=18, partner="q8_0", fields=(("d", "f16", 1), ("qs", "u8", 16)),
           ops=("dequant", "vec_dot"), quantizer=True, fallback="q4_0"),
)



@dataclass(frozen=True)
class Ftype:
    """A llama_ftype (llama.cpp include/llama.h): the file type llama-quantize writes as
    general.file_type, by its llama-quantize name (tools/quantize/quantize.cpp) and its
    description (llama_ftype_name, llama-bench's model_type). With `type` (the ftype's default
    type, llama_ftype_get_default_type) it is a mix `oxillama quantize` writes when that format has
    a quantizer; the other fields name the mix rules of src/llama-quant.cpp's
    llama_tensor_get_type_impl it applies (MIX_ATTN_V, MIX_FFN_DOWN; src/quantize/quant_mix.c)."""
    name: str
    id: int
    desc: str
    type: str = ""               # default format; "" for ftypes that only name files (F32)
    attn_v: str = "keep"         # rule for attn_v / attn_qkv / attn_kv_b
    ffn_down: str = "keep"       # rule for ffn_down
    down_type: str = ""          # ffn_down "imatrix_first8th": the format of those layers
    attn_output: str = ""        # attn_output's format (not Falcon, not 8 experts); "": keep
    attn_output_falcon: str = ""  # Falcon's attn_output; "": keep
    attn_output_8exp_q5_K: bool = False  # 8 experts: attn_output q5_K
    token_embd: str = ""         # token_embd's format when the output has its own tensor; "": keep
    # MXFP4_MOE: the expert stacks (ne[2] > 1) get `type`, every other matrix (the output and the
    # embeddings too) this format, before any other rule; "": no such split
    experts_split_type: str = ""
    # a format whose tensors in this mix need --imatrix beyond the formats' own
    # file_imatrix_required (Q2_K_S: its q2_K tensors, llama-quantize's tensor_requires_imatrix)
    imatrix_type: str = ""
    output: str = ""             # the output's (and tied token_embd's) format when its rows fit; "": q6_K
    attn_k_8exp_q4_K: bool = False  # 8 experts: attn_k q4_K (not q8_0)
    attn_q: str = ""             # attn_q's format; "": keep
    attn_k: str = ""             # attn_k's format (not 8 experts, which take q8_0); "": keep
    ffn_gate_up_middle: str = ""  # ffn_gate and ffn_up on layers n/8 .. 7n/8 - 1; "": keep
    aliases: tuple = ()          # other llama-quantize names of this mix ("Q4_K" for Q4_K_M)
    # `oxillama quantize` writes this mix: its type has a quantizer and the rules above are all of
    # llama.cpp's for it (checked against llama-quantize's files, golden/quantize/expected*.json)
    quantize: bool = False


# The attn_v rules (i = index among those tensors, n = their count) and the ffn_down rules (i = the
# running index of ffn_down tensors, n = n_layer), as llama_tensor_get_type_impl applies them.
MIX_ATTN_V = (
    ("keep", "the ftype's type"),
    ("gqa4_q4_K_else_q3_K", "Q2_K: q4_K with n_head/n_head_kv >= 4, else q3_K"),
    ("gqa4_q4_K", "Q2_K_S: q4_K with n_head/n_head_kv >= 4"),
    ("first2_q5_K_else_q4_K", "Q3_K_M: q5_K on the first 2, else q4_K"),
    ("q5_K", "Q3_K_L"),
    ("more_bits_q6_K", "Q4_K_M, Q5_K_M: q6_K on the use_more_bits layers"),
    ("first4_q5_K", "Q4_K_S: q5_K on the first 4"),
    ("gqa4_q5_K", "IQ4_NL, IQ4_XS: q5_K with n_head/n_head_kv >= 4"),
    ("gqa4_or_4exp_q4_K_else_q2_K", "IQ2_XXS, IQ2_XS: q4_K with n_head/n_head_kv >= 4 or 4+ experts, else q2_K"),
    ("gqa4_or_4exp_q4_K_else_iq3_s", "IQ2_S, IQ2_M: q4_K with n_head/n_head_kv >= 4 or 4+ experts, else iq3_s"),
    ("gqa4_q4_K_else_no_imatrix_iq3_s", "IQ3_XXS: q4_K with n_head/n_head_kv >= 4, else iq3_s without an imatrix"),
    ("q4_K", "IQ3_M"),
)
MIX_FFN_DOWN = (
    ("keep", "the ftype's type"),
    ("q3_K", "Q2_K"),
    ("first8th_q4_K", "Q2_K_S: q4_K on the first n/8 layers"),
    ("q3_K_m", "q5_K on the first n/16, else q4_K (Falcon: q4_K only with more bits, else q3_K)"),
    ("q3_K_l", "q5_K (Falcon: q4_K)"),
    ("q4_K_m", "q6_K with more bits (Falcon: q6_K first n/16, q5_K with more bits)"),
    ("more_bits_q6_K", "Q5_K_M"),
    ("first8th_q5_K", "Q4_K_S: q5_K on the first n/8 layers (not Falcon)"),
    ("imatrix_first8th", "Q4_0, Q5_0: with an imatrix, the first n/8 layers get down_type"),
    ("no_imatrix_first8th_q5_K", "IQ4_NL, IQ4_XS: without an imatrix, q5_K on the first n/8 layers"),
    ("running_first8th_q2_K", "IQ2_XXS, IQ2_XS: q2_K on the first n/8 ffn_down tensors by running index"),
    ("running_first8th_iq3_s", "IQ2_S, IQ2_M: iq3_s on the first n/8 ffn_down tensors by running index"),
    ("no_imatrix_first8th_q4_K_else_q3_K", "IQ3_XXS: without an imatrix, q4_K on the first n/8 layers, else q3_K"),
    ("first8th_or_8exp_more_bits_q4_K", "IQ3_M: q4_K on the first n/8 layers (8 experts: also use_more_bits)"),
)

FTYPES = (
    Ftype("F32", 0, "all F32"),  # llama-quantize's F32 / COPY: not offered
    Ftype("F16", 1, "F16", type="f16", quantize=True),
    Ftype("Q4_0", 2, "Q4_0", type="q4_0", ffn_down="imatrix_first8th", down_type="q4_1", quantize=True),
    Ftype("Q4_1", 3, "Q4_1", type="q4_1", quantize=True),
    Ftype("Q8_0", 7, "Q8_0", type="q8_0", quantize=True),
    Ftype("Q5_0", 8, "Q5_0", type="q5_0", ffn_down="imatrix_first8th", down_type="q5_1", quantize=True),
    Ftype("Q5_1", 9, "Q5_1", type="q5_1", quantize=True),
    Ftype("Q2_K", 10, "Q2_K - Medium", type="q2_K", attn_v="gqa4_q4_K_else_q3_K", ffn_down="q3_K",
          attn_output="q3_K", attn_output_8exp_q5_K=True, quantize=True),
    Ftype("Q3_K_S", 11, "Q3_K - Small", type="q3_K", attn_output_8exp_q5_K=True, quantize=True),
    Ftype("Q3_K_M", 12, "Q3_K - Medium", type="q3_K", attn_v="first2_q5_K_else_q4_K", ffn_down="q3_K_m",
          attn_output="q4_K", attn_output_8exp_q5_K=True, aliases=("Q3_K",), quantize=True),
    Ftype("Q3_K_L", 13, "Q3_K - Large", type="q3_K", attn_v="q5_K", ffn_down="q3_K_l", attn_output="q5_K",
          attn_output_falcon="q4_K", quantize=True),
    Ftype("Q4_K_S", 14, "Q4_K - Small", type="q4_K", attn_v="first4_q5_K", ffn_down="first8th_q5_K",
          attn_output_8exp_q5_K=True, quantize=True),
    Ftype("Q4_K_M", 15, "Q4_K - Medium", type="q4_K", attn_v="more_bits_q6_K", ffn_down="q4_K_m",
          attn_output_8exp_q5_K=True, aliases=("Q4_K",), quantize=True),
    Ftype("Q5_K_S", 16, "Q5_K - Small", type="q5_K", quantize=True),
    Ftype("Q5_K_M", 17, "Q5_K - Medium", type="q5_K", attn_v="more_bits_q6_K", ffn_down="more_bits_q6_K",
          aliases=("Q5_K",), quantize=True),
    Ftype("Q6_K", 18, "Q6_K", type="q6_K", quantize=True),
    Ftype("IQ2_XXS", 19, "IQ2_XXS - 2.0625 bpw", type="iq2_xxs", attn_v="gqa4_or_4exp_q4_K_else_q2_K",
          ffn_down="running_first8th_q2_K", attn_output_8exp_q5_K=True, token_embd="q2_K", output="q5_K",
          attn_k_8exp_q4_K=True, quantize=True),
    Ftype("IQ2_XS", 20, "IQ2_XS - 2.3125 bpw", type="iq2_xs", attn_v="gqa4_or_4exp_q4_K_else_q2_K",
          ffn_down="running_first8th_q2_K", attn_output_8exp_q5_K=True, token_embd="q2_K", output="q5_K",
          attn_k_8exp_q4_K=True, quantize=True),
    Ftype("Q2_K_S", 21, "Q2_K - Small", type="q2_K", attn_v="gqa4_q4_K", ffn_down="first8th_q4_K",
          imatrix_type="q2_K", quantize=True),
    Ftype("IQ3_XS", 22, "IQ3_XS - 3.3 bpw", type="iq3_s", attn_v="gqa4_q4_K", attn_output_8exp_q5_K=True,
          attn_q="iq3_xxs", attn_k="iq3_xxs", ffn_gate_up_middle="iq3_xxs", quantize=True),
    Ftype("IQ3_XXS", 23, "IQ3_XXS - 3.0625 bpw", type="iq3_xxs", attn_v="gqa4_q4_K_else_no_imatrix_iq3_s",
          ffn_down="no_imatrix_first8th_q4_K_else_q3_K", attn_output="iq3_s", attn_output_8exp_q5_K=True,
          output="q5_K", token_embd="iq3_s", attn_q="iq2_s", attn_k="iq2_s", quantize=True),
    Ftype("IQ1_S", 24, "IQ1_S - 1.5625 bpw", type="iq1_s", attn_v="gqa4_or_4exp_q4_K_else_q2_K",
          ffn_down="running_first8th_q2_K", attn_output="iq2_xxs", attn_output_falcon="iq2_xxs",
          attn_output_8exp_q5_K=True, token_embd="q2_K", output="q5_K", attn_k_8exp_q4_K=True,
          quantize=True),
    Ftype("IQ4_NL", 25, "IQ4_NL - 4.5 bpw", type="iq4_nl", attn_v="gqa4_q5_K", ffn_down="no_imatrix_first8th_q5_K",
          attn_output_8exp_q5_K=True, quantize=True),
    Ftype("IQ3_S", 26, "IQ3_S - 3.4375 bpw", type="iq3_s", attn_v="gqa4_q4_K", attn_output_8exp_q5_K=True,
          quantize=True),
    Ftype("IQ3_M", 27, "IQ3_S mix - 3.66 bpw", type="iq3_s", attn_v="q4_K", ffn_down="first8th_or_8exp_more_bits_q4_K",
          attn_output="q4_K", attn_output_8exp_q5_K=True, quantize=True),
    Ftype("IQ2_S", 28, "IQ2_S - 2.5 bpw", type="iq2_xs", attn_v="gqa4_or_4exp_q4_K_else_iq3_s",
          ffn_down="running_first8th_iq3_s", attn_output="iq3_s", attn_output_falcon="iq3_s",
          attn_output_8exp_q5_K=True, token_embd="iq3_s", output="q5_K", attn_k_8exp_q4_K=True, quantize=True),
    Ftype("IQ2_M", 29, "IQ2_M - 2.7 bpw", type="iq2_s", attn_v="gqa4_or_4exp_q4_K_else_iq3_s",
          ffn_down="running_first8th_iq3_s", attn_output="iq3_s", attn_output_falcon="iq3_s",
          attn_output_8exp_q5_K=True, token_embd="iq3_s", output="q5_K", attn_k_8exp_q4_K=True, quantize=True),
    Ftype("IQ4_XS", 30, "IQ4_XS - 4.25 bpw", type="iq4_xs", attn_v="gqa4_q5_K", ffn_down="no_imatrix_first8th_q5_K",
          attn_output_8exp_q5_K=True, quantize=True),
    Ftype("IQ1_M", 31, "IQ1_M - 1.75 bpw", type="iq1_m", attn_v="gqa4_or_4exp_q4_K_else_q2_K",
          ffn_down="running_first8th_q2_K", attn_output="iq2_xxs", attn_output_falcon="iq2_xxs",
          attn_output_8exp_q5_K=True, token_embd="q2_K", output="q5_K", attn_k_8exp_q4_K=True,
          quantize=True),
    Ftype("BF16", 32, "BF16", type="bf16", quantize=True),
    Ftype("TQ1_0", 36, "TQ1_0 - 1.69 bpw ternary", type="tq1_0", token_embd="q4_K", quantize=True),
    Ftype("TQ2_0", 37, "TQ2_0 - 2.06 bpw ternary", type="tq2_0", token_embd="q4_K", quantize=True),
    Ftype("MXFP4_MOE", 38, "MXFP4 MoE", type="mxfp4", experts_split_type="q8_0", quantize=True),
    Ftype("NVFP4", 39, "NVFP4", type="nvfp4"),
    Ftype("Q1_0", 40, "Q1_0", type="q1_0", quantize=True),
    Ftype("Q2_0", 41, "Q2_0", type="q2_0", token_embd="q4_K", quantize=True),
)

# The lookup tables that define the I-quant and FP4 formats, as ggml (MIT licence) has them in
# ggml/src/ggml-common.h: the values come from gen/tables/ggml-quant-tables.json (its README says
# where that file comes from); this maps each table's name there to the C type of one element.
# generated/oxl_quant_tables.h holds, as `oxl_<name>`, every table a format names in `tables`.
QUANT_TABLES_JSON = "gen/tables/ggml-quant-tables.json"
QUANT_TABLES = {
    "kmask_iq2xs": "uint8_t",
    "ksigns_iq2xs": "uint8_t",
    "iq2xxs_grid": "uint64_t",
    "iq2xs_grid": "uint64_t",
    "iq2s_grid": "uint64_t",
    "iq3xxs_grid": "uint32_t",
    "iq3s_grid": "uint32_t",
    "iq1s_grid": "uint64_t",
    "kvalues_iq4nl": "int8_t",
    "kvalues_fp4": "int8_t",
}

# The grids src/quantize/iq_grid.c builds ggml's neighbour tables from (iq2xs_init_impl), for the
# quantizers of iq2_xxs, iq2_xs, iq2_s, iq1_s and iq1_m: always in generated/oxl_quant_tables.h.
GRID_TABLES = ("iq2xxs_grid", "iq2xs_grid", "iq2s_grid", "iq1s_grid")

# The range of values each C type holds (checked against the JSON before anything is written).
TABLE_CTYPE_RANGE = {
    "int8_t": (-128, 127), "uint8_t": (0, 255), "uint32_t": (0, 2**32 - 1), "uint64_t": (0, 2**64 - 1),
}


@dataclass(frozen=True)
class Feature:
    """A CPU feature bit: CPUID (leaf, subleaf, register, bit) or, for "xcr0", the XCR0 state
    bits that must all be set (the OS saves those registers on context switch)."""
    name: str
    leaf: object              # int CPUID leaf, or "xcr0"
    subleaf: int = 0
    reg: str = ""             # eax, ebx, ecx, edx
    bit: int = 0
    xcr0_mask: int = 0
    arch: str = ""            # for "hwcap" (a bit of getauxval(AT_HWCAP)) and "build" features


FEATURES = (
    Feature("osxsave", 1, 0, "ecx", 27),
    Feature("ssse3", 1, 0, "ecx", 9),
    Feature("sse41", 1, 0, "ecx", 19),
    Feature("fma", 1, 0, "ecx", 12),
    Feature("f16c", 1, 0, "ecx", 29),
    Feature("avx", 1, 0, "ecx", 28),
    Feature("avx2", 7, 0, "ebx", 5),
    Feature("avx512f", 7, 0, "ebx", 16),
    Feature("avx512dq", 7, 0, "ebx", 17),
    Feature("avx512bw", 7, 0, "ebx", 30),
    Feature("avx512vl", 7, 0, "ebx", 31),
    Feature("avx512vnni", 7, 0, "ecx", 11),
    Feature("os_ymm", "xcr0", xcr0_mask=0x6),      # SSE + AVX state
    Feature("os_zmm", "xcr0", xcr0_mask=0xE6),     # + opmask, ZMM0-15 high, ZMM16-31
    # Linux AT_HWCAP bits (asm/hwcap.h): AArch64 HWCAP_ASIMD, HWCAP_ASIMDDP; RISC-V COMPAT_HWCAP_ISA_V
    # ('V' - 'A'). "build": set when the translation unit is compiled with that target feature.
    Feature("asimd", "hwcap", bit=1, arch="arm64"),
    Feature("asimddp", "hwcap", bit=20, arch="arm64"),
    Feature("rvv", "hwcap", bit=21, arch="riscv64"),
    Feature("simd128", "build", arch="wasm32"),
)


@dataclass(frozen=True)
class Isa:
    """An instruction-set level. Its rank (capability order, higher = better) is its place in ISAS;
    `base` is the ISA whose per-format overrides this one reuses when it has none of its own."""
    name: str
    cflags: tuple
    features: tuple           # Feature names, all required
    arch: str = ""            # "x86" or "" (any)
    base: str = ""
    gemm_tile: tuple = (1, 1)  # gemm register tile: (weight rows, activation columns)

    @property
    def rank(self):
        return ISAS.index(self)


ISAS = (
    Isa("scalar", cflags=(), features=()),
    # SSSE3 + SSE4.1 (pmaddubsw, pmovsx/zx, blendv, roundps): no FMA and no F16C
    Isa("sse41", cflags=("-mssse3", "-msse4.1"), features=("ssse3", "sse41"), arch="x86", gemm_tile=(2, 2)),
    Isa("avx2", cflags=("-mavx2", "-mfma", "-mf16c"),
        features=("osxsave", "avx", "avx2", "fma", "f16c", "os_ymm"), arch="x86", gemm_tile=(2, 2)),
    Isa("avx512bw",
        cflags=("-mavx2", "-mfma", "-mf16c", "-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq"),
        features=("osxsave", "avx", "avx2", "fma", "f16c", "os_ymm", "avx512f", "avx512bw", "avx512vl",
                  "avx512dq", "os_zmm"), arch="x86", base="avx2", gemm_tile=(4, 4)),
    # AVX-512 + VNNI (vpdpbusd: u8 x s8 products summed into int32 lanes, no int16 saturation)
    Isa("avx512vnni",
        cflags=("-mavx2", "-mfma", "-mf16c", "-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq",
                "-mavx512vnni"),
        features=("osxsave", "avx", "avx2", "fma", "f16c", "os_ymm", "avx512f", "avx512bw", "avx512vl",
                  "avx512dq", "os_zmm", "avx512vnni"), arch="x86", base="avx512bw", gemm_tile=(4, 4)),
    # AArch64 Advanced SIMD (every AArch64 CPU has it), then + SDOT/UDOT (FEAT_DotProd)
    Isa("neon", cflags=(), features=("asimd",), arch="arm64", gemm_tile=(2, 2)),
    Isa("neondot", cflags=("-march=armv8.2-a+dotprod",), features=("asimd", "asimddp"), arch="arm64",
        base="neon", gemm_tile=(2, 2)),
    # RISC-V V 1.0, vector-length agnostic (any VLEN >= 128, the V extension's minimum). No
    # auto-vectorization: the vector code is the templates' intrinsics (and QEMU 7.2, which the
    # cross tests run on, asserts on some of clang 16's auto-vectorized sequences)
    Isa("rvv", cflags=("-march=rv64gcv", "-fno-vectorize", "-fno-slp-vectorize"), features=("rvv",),
        arch="riscv64", gemm_tile=(2, 2)),
    # WebAssembly SIMD128: a build-time choice (the wasm32 toolchain file passes -msimd128)
    Isa("wasmsimd", cflags=(), features=("simd128",), arch="wasm32", gemm_tile=(2, 2)),
)

# Architecture guards: the C preprocessor test and the CMake processor regex for each arch.
ARCHES = {
    "x86": ("defined(__x86_64__) || defined(__i386__)", "x86_64|AMD64|amd64|i[3-6]86"),
    "arm64": ("defined(__aarch64__)", "aarch64|arm64|ARM64"),
    "riscv64": ("defined(__riscv) && __riscv_xlen == 64", "riscv64"),
    "wasm32": ("defined(__wasm_simd128__)", "wasm32"),
}

@dataclass(frozen=True)
class Op:
    """A kernel op: its C signature (return type and parameter list; the generator writes the
    function-pointer type oxl_<name>_fn, the prototype macro OXL_KERNEL_SIG_<name>(fn) and the
    dispatch table's fields from it) and what every cell of it computes (the documentation of
    generated/oxl_kernel_decls.h). Which formats have the op is each Format's `ops` (REPACKS for
    the repacked-layout ops)."""
    name: str
    ret: str
    params: str
    doc: str


# Kernel ops, in dispatch-table order. Function names follow XNNPACK: what, then __isa
# (kernel_name below). All follow ggml's CPU backend (ggml/src/ggml-cpu), as each doc says.
OP_TABLE = (
    Op("dequant", "void", "const void *restrict x, float *restrict y, int64_t n",
       "y[0..n) = to_float(x), n a multiple of the format's block size; bit-exact with ggml's "
       "to_float."),
    Op("quant", "void", "const float *restrict x, void *restrict y, int64_t n",
       "activation quantizer y = from_float(x[0..n)) in the format (Q8_0, Q8_1, Q8_K, F16, BF16; F32 "
       "copies), as ggml's x86 CPU backend converts activations."),
    Op("vec_dot", "void", "int64_t n, float *restrict s, const void *restrict x, const void *restrict y",
       "*s = dot(x, y) over n elements, x in the weight format, y in its vec_dot_type (the format's "
       "partner)."),
    Op("gemm", "void",
       "int64_t k, int64_t m, int64_t n, const void *restrict a, size_t lda, const void *restrict b, "
       "size_t ldb, float *restrict c, int64_t ldc",
       "c[j * ldc + i] = dot(row i of a, column j of b) for i < m, j < n: a holds m weight rows of k "
       "elements (lda bytes apart), b n columns of k in the vec_dot_type (ldb bytes apart); k a "
       "multiple of oxl_gemm_k_step(type). f32, f16 and bf16 only, summed as llamafile's tinyBLAS on "
       "AVX-512 (bf16: its AVX512-BF16 vdpbf16ps)."),
    Op("swiglu", "void", "int64_t n, float *y, const float *x, const float *g",
       "y[i] = silu(x[i]) * g[i] over one row of n (y may be x), f32 only: ggml_vec_swiglu_f32 of the "
       "AVX-512 build (its vector SiLU on whole groups of 16, expf on the rest), so call it once per "
       "row."),
    Op("mad", "void", "int64_t n, float *restrict y, const float *restrict x, float s",
       "y[i] = fma(x[i], s, y[i]) over n (ggml_vec_mad_f32); on f16 each result is rounded to the "
       "nearest half (ggml_vec_mad_f16: y holds an f16 accumulator's values as floats)."),
    Op("mad_rows", "void",
       "int64_t n, int64_t rows, int64_t heads, float *restrict y, const void *restrict x, size_t ldx, "
       "const float *restrict ms, const float *restrict vs",
       "for each head h < heads (its accumulator y_h = y + h * n, its scales ms_h = ms + h * rows and "
       "vs_h = vs + h * rows) and r < rows in order: y_h[i] *= ms_h[r] over n when ms_h[r] != 1 "
       "(ggml_vec_scale_f16), then y_h[i] = fma(x_r[i], vs_h[r], y_h[i]) (ggml_vec_mad_f16), x_r row r "
       "of x in the format (ldx bytes apart), every result rounded to the nearest half: the f16 "
       "accumulators of flash attention's query heads over a run of cache rows (f16 only; y holds the "
       "halves as floats), equal to mad row by row."),
    Op("dot_rows", "void",
       "int64_t n, int64_t rows, int64_t heads, float *restrict s, const void *restrict x, size_t ldx, "
       "const void *restrict y, size_t ldy",
       "s[h * rows + r] = dot(x_r, y_h) over n for h < heads and r < rows, x_r row r of x (ldx bytes "
       "apart) and y_h the vector y + h * ldy bytes, both in the format: bit-identical to vec_dot row "
       "by row (the scores of flash attention's query heads over a run of cache rows; f16 only)."),
    Op("sgemm_acc", "void",
       "int64_t m, int64_t k, int64_t n, float *restrict c, const float *restrict a, "
       "const float *restrict b",
       "c[m x n] += a[m x k] b[k x n] (row-major, n % 16 == 0), each output one FMA per kk in order: "
       "ggml's simd_gemm, the products of its tiled flash attention (f32 only)."),
    Op("softmax", "double", "int64_t n, float *y, const float *x, float max",
       "y[i] = exp(x[i] - max), returning the sum in double: ggml_vec_soft_max_f32 (f32 only)."),
    Op("repack", "void", "int64_t k, int64_t m, const void *restrict src, size_t src_row, void *restrict dst",
       "rows 0..m of a weight matrix (m a multiple of the layout's rows) rewritten into the ISA's "
       "interleaved layout (REPACKS; oxl_repack_rows/_group_bytes): group g, block b at "
       "(g * blocks per row + b) * group bytes."),
    Op("gemm_rp", "void",
       "int64_t k, int64_t m, int64_t n, const void *restrict a, const void *restrict b, size_t ldb, "
       "const int32_t *restrict bsum, float *restrict c, int64_t ldc",
       "gemm over repacked weights: c[j * ldc + i] = row i . column j for i < m, j < n, the columns in "
       "the vec_dot_type (ldb bytes apart); for a q8_0 partner bsum holds per column (k / 32 + k / 4 "
       "apart) the sum of each block's quants, then of each group of 4 (NULL for q8_K, which carries "
       "bsums). One column (n == 1) is summed in ggml's vec_dot order where the layout's template "
       "says so (Q4_0, Q8_0: decoding equals the plain rows')."),
)
OP_BY_NAME = {o.name: o for o in OP_TABLE}

# Ops of the plain formats (a Format's `ops` names some of these). swiglu is ggml_vec_swiglu_f32 of
# the AVX-512 build on every ISA; mad is the attention accumulator's step (mad_rows: a run of them
# over f16 cache rows, with the rescales of a growing maximum; dot_rows: the scores of such a run,
# each vec_dot's sums); sgemm_acc and softmax
# are the two steps of ggml's tiled flash attention (prompt batches of 64+ tokens).
OPS = ("dequant", "quant", "vec_dot", "gemm", "swiglu", "mad", "mad_rows", "dot_rows", "sgemm_acc", "softmax")

# Ops of the repacked weight layouts (REPACKS below): repack rewrites whole groups of weight rows
# into a layout interleaved for one ISA's register tile; gemm_rp multiplies such groups by
# activation columns in the format's partner type.
REPACK_OPS = ("repack", "gemm_rp")


@dataclass(frozen=True)
class Repack:
    """Weights repacked at load for one ISA: `rows` consecutive rows interleaved per block of the
    format (one group block of `group_bytes`, the rows' scales first, then their quants arranged so
    that lane r of a vector holds row r), multiplied by gemm_rp in register tiles of `rows` outputs x
    `cols` activation columns. The layout of each format is described in its template,
    templates/repack/<format>__<isa>.c.j2."""
    fmt: str
    isa: str
    rows: int
    cols: int
    group_bytes: int


REPACKS = (
    Repack("q4_0", "avx512vnni", 16, 8, 16 * 2 + 16 * 16),
    Repack("q4_0", "avx2", 8, 8, 8 * 2 + 8 * 16),
    Repack("q8_0", "avx512vnni", 16, 8, 16 * 2 + 16 * 32),
    Repack("iq4_nl", "avx512vnni", 16, 8, 16 * 2 + 16 * 16),
    Repack("iq4_nl", "avx2", 8, 4, 8 * 2 + 8 * 16),
    Repack("iq4_xs", "avx512vnni", 16, 4, 16 * 2 + 8 * 16 + 8 * 4 * 64),
    Repack("iq4_xs", "avx2", 8, 4, 8 * 2 + 8 * 8 + 8 * 4 * 32),
    Repack("mxfp4", "avx512vnni", 16, 3, 16 + 16 * 16),
    Repack("mxfp4", "avx2", 8, 1, 8 + 8 * 16),
    Repack("q4_K", "avx512vnni", 16, 4, 16 * 2 * 2 + 8 * 16 + 4 * 32 + 16 * 128),
    Repack("q4_K", "avx2", 8, 4, 8 * 2 * 2 + 8 * 8 + 4 * 16 + 8 * 128),
    Repack("q5_K", "avx512vnni", 16, 4, 16 * 2 * 2 + 8 * 16 + 4 * 32 + 16 * 128 + 8 * 8 * 8),
    Repack("q6_K", "avx512vnni", 16, 4, 16 * 2 + 8 * 32 + 16 * 256),
    Repack("q6_K", "avx2", 8, 4, 8 * 2 + 8 * 16 + 8 * 256),
    Repack("tq2_0", "avx512vnni", 16, 4, 16 * 2 + 8 * 2 * 64),
    Repack("q1_0", "avx512vnni", 16, 4, 16 * 2 + 4 * 8 * 8),
    Repack("tq2_0", "avx2", 8, 4, 8 * 2 + 8 * 2 * 32),
    Repack("q1_0", "avx2", 8, 4, 8 * 2 + 4 * 8 * 4),
    Repack("iq3_s", "avx512vnni", 16, 8, 16 * 110),
    Repack("iq2_xxs", "avx512vnni", 16, 8, 16 * 66),
    Repack("iq3_s", "avx2", 8, 8, 8 * 110),
    Repack("iq2_xxs", "avx2", 8, 8, 8 * 66),
)

# Formats whose f32 sums follow ggml's AVX-512 order exactly on every ISA (docs/kernels.md,
# "Summation order"): vec_dot as ggml_vec_dot_f32/_f16/_bf16, gemm as the llamafile tinyBLAS kernel
# (bf16: the AVX512-BF16 build's vdpbf16ps, emulated lane by lane).
# The kernel tests compare these bit for bit with the scalar reference in tests/kernel_checker.c.
# Other formats' dots only promise ggml's value to within summation noise.
GGML_ORDER_FORMATS = ("f32", "f16", "bf16")
# gemm's reduction dimension must be a multiple of this (the lanes of one accumulator).
# Batches of up to this many columns of a repacked Q4_0/Q8_0 product on AVX-512 VNNI are summed
# column by column in the one-column order (templates/repack_ops.j2, oxl_rp_exact_*): a speculative
# draft verified in one batch gets the bits decoding token by token gets. Larger batches take the
# tiles, unless oxl_matmul runs them in chunks of this size (oxl_matmul_set_exact).
RP_EXACT_COLS = 32

GEMM_K_STEP = 16
# Formats whose gemm steps k by another amount: bf16's tinyBLAS<32, __m512, __m512bh> consumes 32
# elements (16 lanes of vdpbf16ps pairs) per accumulator update.
GEMM_K_STEPS = {"bf16": 32}


def gemm_k_step(fmt):
    return GEMM_K_STEPS.get(fmt, GEMM_K_STEP)


def kernel_name(op, fmt, isa):
    f = FORMAT_BY_NAME[fmt]
    if op == "vec_dot":
        return f"oxl_vec_dot_{f.name}_{f.partner}__{isa}"
    if op == "gemm":
        mr, nr = ISA_BY_NAME[isa].gemm_tile
        return f"oxl_gemm_{f.name}_{f.partner}_{mr}x{nr}__{isa}"
    if op == "repack":
        rp = repack_of(fmt, isa)
        return f"oxl_repack_{f.name}_{rp.rows}r__{isa}"
    if op == "gemm_rp":
        rp = repack_of(fmt, isa)
        return f"oxl_gemm_rp_{f.name}_{f.partner}_{rp.rows}x{rp.cols}__{isa}"
    return f"oxl_{op}_{f.name}__{isa}"


def repack_of(fmt, isa):
    for rp in REPACKS:
        if rp.fmt == fmt and rp.isa == isa:
            return rp
    raise SpecError(f"no repacked layout of {fmt} on {isa}")


# ---- GPU compute shaders (src/gpu, Vulkan) -------------------------------------------------------
# One row per generated shader: templates/gpu/<template> rendered with `params` into
# generated/gpu/<name>.comp (GLSL 450), compiled by glslc at build time and listed with its metadata
# in generated/gpu/oxl_gpu_shader_list.inc for the runtime. `push` names the push-constant fields in
# order ("uint name" or "float name", 4 bytes each): the template declares that block and the C caller
# a struct of the same fields (the runtime checks the size). `bindings`: storage buffers 0..n-1.
# mul_mat shaders: `rows`/`cols` output rows / columns per workgroup (oxl_gpu_mul_mat reads them).


@dataclass(frozen=True)
class GpuShader:
    name: str
    template: str             # file name under templates/gpu/
    params: tuple = ()        # ((key, value), ...) passed to the template
    local: int = 64           # local_size_x
    push: tuple = ()          # push-constant fields, in order
    bindings: int = 3
    rows: int = 1             # mul_mat: output rows per workgroup
    cols: int = 1             # mul_mat: output columns per workgroup

    @property
    def push_size(self):
        return 4 * len(self.push)

    @property
    def param(self):
        return dict(self.params)


# The mul_mat convention (every format): Y (nrows, ncols) = W (K, nrows) . X (K, ncols).
GPU_MUL_MAT_PUSH = ("uint nrows", "uint ncols", "uint K", "uint w_off", "uint w_row", "uint x_off",
                    "uint x_col", "uint y_off", "uint y_col")
# Elementwise ops over n elements: y[i] = a[i] op b[i % nb] (b broadcast by repetition; scale: a * s).
GPU_BINARY_PUSH = ("uint n", "uint nb", "uint a_off", "uint b_off", "uint y_off", "float s")
GPU_NORM_PUSH = ("uint d", "uint n", "uint x_off", "uint y_off", "uint w_off", "uint b_off",
                 "uint w_rows", "uint flags", "float eps")
GPU_ROPE_PUSH = ("uint n_dims", "uint head_dim", "uint n_head", "uint n_tok", "uint x_off",
                 "uint x_tok", "uint cs_off", "uint flags")
GPU_GLU_PUSH = ("uint n", "uint n_rows", "uint g_off", "uint g_row", "uint u_off", "uint u_row",
                "uint y_off", "uint y_row")
GPU_SET_ROWS_PUSH = ("uint d", "uint n", "uint x_off", "uint x_row", "uint row0", "uint dst_off",
                     "uint dst_row")
GPU_SOFT_MAX_PUSH = ("uint d", "uint n", "uint x_off", "uint y_off", "float scale")
GPU_FLASH_PUSH = ("uint head_dim", "uint n_head", "uint n_head_kv", "uint n_tok", "uint q_off",
                  "uint q_tok", "uint k_off", "uint k_row", "uint v_off", "uint v_row", "uint o_off",
                  "uint o_tok", "uint flags", "float scale", "float softcap")

# The mixture-of-experts block (arch/moe_gpu.c): the routing, the chosen experts' products (the
# expert e = ids[ids_off + t * n_used + s] of token t, slot s at byte w_off + e * w_expert of the 3-D
# tensor; the column at x_off + t * x_col + s * x_slot), their biases, gpt-oss's activation and the
# weighted sum of the slots.
GPU_MUL_MAT_ID_PUSH = GPU_MUL_MAT_PUSH + ("uint n_used", "uint w_expert", "uint x_slot", "uint ids_off")
GPU_MOE_SHADERS = (
    GpuShader("topk_moe", "topk_moe.comp.j2",
              push=("uint n_expert", "uint n_used", "uint n_tokens", "uint gating", "uint flags", "uint n_group",
                    "uint n_group_used", "float w_scale", "uint l_off", "uint l_col", "uint rb_off", "uint pb_off",
                    "uint ids_off", "uint w_off"), bindings=5),
    GpuShader("mul_mat_id_f32", "mul_mat_id.comp.j2", (("fmt", "f32"),), push=GPU_MUL_MAT_ID_PUSH, bindings=4),
    GpuShader("mul_mat_id_f16", "mul_mat_id.comp.j2", (("fmt", "f16"),), push=GPU_MUL_MAT_ID_PUSH, bindings=4),
    GpuShader("mul_mat_id_bf16", "mul_mat_id.comp.j2", (("fmt", "bf16"),), push=GPU_MUL_MAT_ID_PUSH, bindings=4),
    GpuShader("add_id", "add_id.comp.j2",
              push=("uint nrows", "uint npairs", "uint y_off", "uint y_col", "uint b_off", "uint b_row",
                    "uint ids_off")),
    GpuShader("glu_swiglu_oai", "glu_swiglu_oai.comp.j2",
              push=("uint n", "uint g_off", "uint u_off", "uint y_off", "float alpha", "float limit")),
    GpuShader("moe_sum", "moe_sum.comp.j2",
              push=("uint n_embd", "uint n_tokens", "uint n_used", "uint flags", "uint d_off", "uint w_off",
                    "uint sh_off", "uint gate_off", "uint o_off"), bindings=5),
)

GPU_SHADERS = GPU_MOE_SHADERS + (
    GpuShader("mul_mat_f32", "mul_mat.comp.j2", (("fmt", "f32"), ("includes", ("gpu/common.glsl.j2", "gpu/ggml_order.glsl.j2"))),
              push=GPU_MUL_MAT_PUSH, cols=4),
    GpuShader("mul_mat_f16", "mul_mat.comp.j2", (("fmt", "f16"), ("includes", ("gpu/common.glsl.j2", "gpu/ggml_order.glsl.j2"))),
              push=GPU_MUL_MAT_PUSH, cols=4),
    GpuShader("mul_mat_bf16", "mul_mat.comp.j2", (("fmt", "bf16"), ("includes", ("gpu/common.glsl.j2", "gpu/ggml_order.glsl.j2"))),
              push=GPU_MUL_MAT_PUSH, cols=4),
    GpuShader("quantize_f16", "quantize_half.comp.j2", (("fmt", "f16"),), push=("uint n", "uint x_off", "uint y_off"),
              bindings=2),
    GpuShader("quantize_bf16", "quantize_half.comp.j2", (("fmt", "bf16"),),
              push=("uint n", "uint x_off", "uint y_off"), bindings=2),
    GpuShader("add", "binary.comp.j2", (("op", "add"),), push=GPU_BINARY_PUSH),
    GpuShader("mul", "binary.comp.j2", (("op", "mul"),), push=GPU_BINARY_PUSH),
    GpuShader("scale", "binary.comp.j2", (("op", "scale"),), push=GPU_BINARY_PUSH, bindings=2),
    GpuShader("softcap", "binary.comp.j2", (("op", "softcap"),), push=GPU_BINARY_PUSH, bindings=2),
    GpuShader("rms_norm", "norm.comp.j2", (("op", "rms_norm"), ("includes", ("gpu/common.glsl.j2", "gpu/ggml_order.glsl.j2"))),
              push=GPU_NORM_PUSH, bindings=4),
    GpuShader("norm", "norm.comp.j2", (("op", "norm"), ("includes", ("gpu/common.glsl.j2", "gpu/ggml_order.glsl.j2"))),
              push=GPU_NORM_PUSH, bindings=4),
    GpuShader("rope_norm", "rope.comp.j2", (("mode", "norm"),), push=GPU_ROPE_PUSH, bindings=2),
    GpuShader("rope_neox", "rope.comp.j2", (("mode", "neox"),), push=GPU_ROPE_PUSH, bindings=2),
    GpuShader("rope_multi", "rope.comp.j2", (("mode", "multi"),), push=GPU_ROPE_PUSH, bindings=2),
    GpuShader("glu_swiglu", "glu.comp.j2", (("op", "swiglu"),), push=GPU_GLU_PUSH),
    GpuShader("glu_geglu", "glu.comp.j2", (("op", "geglu"),), push=GPU_GLU_PUSH),
    GpuShader("gelu", "glu.comp.j2", (("op", "gelu"),), push=GPU_GLU_PUSH, bindings=2),
    GpuShader("set_rows_f16", "set_rows.comp.j2", (("kv", "f16"),), push=GPU_SET_ROWS_PUSH),
    GpuShader("set_rows_f32", "set_rows.comp.j2", (("kv", "f32"),), push=GPU_SET_ROWS_PUSH),
    GpuShader("soft_max", "soft_max.comp.j2", push=GPU_SOFT_MAX_PUSH, bindings=2),
    GpuShader("flash_attn_f16", "flash_attn.comp.j2", (("kv", "f16"), ("maxd", 512)), push=GPU_FLASH_PUSH,
              bindings=6),
    GpuShader("flash_attn_f32", "flash_attn.comp.j2", (("kv", "f32"), ("maxd", 512)), push=GPU_FLASH_PUSH,
              bindings=6),
)
GPU_SHADER_BY_NAME = {s.name: s for s in GPU_SHADERS}

FORMAT_BY_NAME = {f.name: f for f in FORMATS}
ISA_BY_NAME = {i.name: i for i in ISAS}
FEATURE_BY_NAME = {f.name: f for f in FEATURES}


class SpecError(Exception):
    pass


def field_bytes(fmt):
    return sum(FIELD_TYPES[t][1] * n for _, t, n in fmt.fields)


def validate(template_formats):
    """Fails loudly on any inconsistency. template_formats: the format names that have a kernel
    template in templates/formats/."""
    errors = []
    if tuple(o.name for o in OP_TABLE) != OPS + REPACK_OPS:
        errors.append(f"OP_TABLE {[o.name for o in OP_TABLE]} must list OPS then REPACK_OPS in order")
    ids, names = set(), set()
    for f in FORMATS:
        if f.id in ids:
            errors.append(f"format id {f.id} ({f.name}) is not unique")
        if f.name.lower() in names:
            errors.append(f"format name {f.name} is not unique")
        ids.add(f.id)
        names.add(f.name.lower())
        if f.fields:
            if field_bytes(f) != f.size:
                errors.append(f"{f.name}: bytes per block {f.size} != sum of fields {field_bytes(f)}")
            for fname, t, _ in f.fields:
                if t not in FIELD_TYPES:
                    errors.append(f"{f.name}.{fname}: unknown field type {t}")
        elif f.blck != 1 or not f.elem:
            errors.append(f"{f.name}: a format without block fields must have block size 1 and elem")
        if f.partner not in FORMAT_BY_NAME:
            errors.append(f"{f.name}: activation partner {f.partner} is not a format")
        elif "vec_dot" in f.ops:
            p = FORMAT_BY_NAME[f.partner]
            if "quant" not in p.ops:
                errors.append(f"{f.name}: partner {p.name} has no activation quantizer")
            if f.blck % p.blck:
                errors.append(f"{f.name}: block {f.blck} is not a multiple of partner {p.name}'s")
        for op in f.ops:
            if op not in OPS:
                errors.append(f"{f.name}: unknown op {op}")
        if "gemm" in f.ops and f.name not in GGML_ORDER_FORMATS:
            errors.append(f"{f.name}: gemm is only specified for the ggml-order formats {GGML_ORDER_FORMATS}")
        if "swiglu" in f.ops and f.name != "f32":
            errors.append(f"{f.name}: swiglu is only specified for f32")
        for op in ("sgemm_acc", "softmax"):
            if op in f.ops and f.name != "f32":
                errors.append(f"{f.name}: {op} is only specified for f32")
        if "mad" in f.ops and f.name not in ("f32", "f16"):
            errors.append(f"{f.name}: mad is only specified for f32 and f16 accumulators")
        for op in ("mad_rows", "dot_rows"):
            if op in f.ops and f.name != "f16":
                errors.append(f"{f.name}: {op} is only specified for f16")
        for i in f.isas:
            if i not in ISA_BY_NAME:
                errors.append(f"{f.name}: unknown ISA {i}")
        for t in f.tables:
            if t not in QUANT_TABLES:
                errors.append(f"{f.name}: table {t} is not in QUANT_TABLES")
        if f.ops and f.isas and "scalar" not in f.isas:
            errors.append(f"{f.name}: no scalar cell (every (format, op) needs one)")
        if f.imatrix and not f.quantizer:
            errors.append(f"{f.name}: imatrix=True needs quantizer=True")
        if f.fallback and (f.fallback not in FORMAT_BY_NAME or FORMAT_BY_NAME[f.fallback].blck >= f.blck):
            errors.append(f"{f.name}: fallback {f.fallback} must be a format with a smaller block")
        if f.imatrix_required and not f.file_imatrix_required:
            errors.append(f"{f.name}: imatrix_required=True needs file_imatrix_required=True")
        if f.kv_cache and not (f.quantizer and {"dequant", "vec_dot"} <= set(f.ops)):
            errors.append(f"{f.name}: a KV-cache type needs a quantizer, dequant and vec_dot")
    for name, ctype in QUANT_TABLES.items():
        if ctype not in TABLE_CTYPE_RANGE:
            errors.append(f"table {name}: C type {ctype} has no known range")
    rules_v, rules_down = {r for r, _ in MIX_ATTN_V}, {r for r, _ in MIX_FFN_DOWN}
    ft_ids, ft_names = set(), set()
    for ft in FTYPES:
        names = (ft.name,) + ft.aliases
        if ft.id in ft_ids or ft_names & {n.upper() for n in names}:
            errors.append(f"ftype {ft.name} ({ft.id}): id or name listed twice")
        ft_ids.add(ft.id)
        ft_names |= {n.upper() for n in names}
        for what, t in (("type", ft.type), ("down_type", ft.down_type), ("attn_output", ft.attn_output),
                        ("attn_output_falcon", ft.attn_output_falcon), ("experts_split_type", ft.experts_split_type),
                        ("imatrix_type", ft.imatrix_type),
                        ("token_embd", ft.token_embd), ("output", ft.output), ("attn_q", ft.attn_q), ("attn_k", ft.attn_k),
                        ("ffn_gate_up_middle", ft.ffn_gate_up_middle)):
            if t and t not in FORMAT_BY_NAME:
                errors.append(f"ftype {ft.name}: {what} {t} is not a format")
        if ft.attn_v not in rules_v or ft.ffn_down not in rules_down:
            errors.append(f"ftype {ft.name}: unknown mix rule {ft.attn_v} / {ft.ffn_down}")
        if (ft.ffn_down == "imatrix_first8th") != bool(ft.down_type):
            errors.append(f"ftype {ft.name}: down_type goes with ffn_down imatrix_first8th, and only with it")
        if ft.quantize:
            for t in {ft.type, ft.down_type, ft.attn_output, ft.attn_output_falcon, ft.experts_split_type, ft.output,
                      ft.token_embd, ft.attn_q, ft.attn_k, ft.ffn_gate_up_middle} - {""}:
                if t not in FORMAT_BY_NAME or not FORMAT_BY_NAME[t].quantizer:
                    errors.append(f"ftype {ft.name}: quantize=True but {t or 'its type'} has no quantizer")
    seen = set()
    for rp in REPACKS:
        f = FORMAT_BY_NAME.get(rp.fmt)
        if f is None or rp.isa not in ISA_BY_NAME:
            errors.append(f"repack {rp.fmt} on {rp.isa}: unknown format or ISA")
            continue
        if (rp.fmt, rp.isa) in seen:
            errors.append(f"repack {rp.fmt} on {rp.isa}: listed twice")
        seen.add((rp.fmt, rp.isa))
        if "vec_dot" not in f.ops or "quant" not in FORMAT_BY_NAME[f.partner].ops:
            errors.append(f"repack {rp.fmt}: needs the format's vec_dot and its partner's quantizer")
        if rp.rows <= 0 or rp.cols <= 0 or rp.group_bytes < rp.rows * f.size:
            errors.append(f"repack {rp.fmt} on {rp.isa}: bad tile")
    with_kernels = {f.name for f in FORMATS if f.ops}
    for n in sorted(with_kernels - set(template_formats)):
        errors.append(f"{n}: has kernel ops but no template templates/formats/{n}.c.j2")
    for n in sorted(set(template_formats) - with_kernels):
        errors.append(f"templates/formats/{n}.c.j2: no format with kernel ops named {n}")
    if len({i.name for i in ISAS}) != len(ISAS):
        errors.append("ISA names must be unique")
    if ISAS[0].name != "scalar":
        errors.append("the first ISA must be scalar")
    for ft in FEATURES:
        if ft.leaf in ("hwcap", "build") and ft.arch not in ARCHES:
            errors.append(f"CPU feature {ft.name}: {ft.leaf} needs a known arch, got {ft.arch!r}")
    for i in ISAS:
        for ft in i.features:
            if ft not in FEATURE_BY_NAME:
                errors.append(f"ISA {i.name}: unknown CPU feature {ft}")
        if i.base and (i.base not in ISA_BY_NAME or ISA_BY_NAME[i.base].rank >= i.rank):
            errors.append(f"ISA {i.name}: base {i.base} must be a lower ISA")
        if i.arch and i.arch not in ARCHES:
            errors.append(f"ISA {i.name}: unknown arch {i.arch}")
        if len(i.gemm_tile) != 2 or min(i.gemm_tile) < 1:
            errors.append(f"ISA {i.name}: gemm_tile must be (rows >= 1, columns >= 1), got {i.gemm_tile}")
    if errors:
        raise SpecError("spec errors:\n  " + "\n  ".join(errors))


def removed_ids():
    """The ids below the largest that ggml no longer uses, as "4, 5, 31-33"."""
    used = {f.id for f in FORMATS}
    gaps = [i for i in range(FORMATS[-1].id) if i not in used]
    runs = []
    for i in gaps:
        if runs and runs[-1][1] == i - 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ", ".join(str(a) if a == b else f"{a}, {b}" if b == a + 1 else f"{a}-{b}" for a, b in runs)


def cell_isas(fmt):
    """The ISAs a format has kernels for, in rank order."""
    return [i for i in ISAS if not fmt.isas or i.name in fmt.isas]


def quant_tables_used():
    """The names of QUANT_TABLES that some format or GRID_TABLES uses, in QUANT_TABLES order."""
    used = {t for f in FORMATS for t in f.tables} | set(GRID_TABLES)
    return [t for t in QUANT_TABLES if t in used]


def load_quant_tables(root):
    """{name: list of ints} of the tables some format uses, read from QUANT_TABLES_JSON under root
    and checked: present, a list of integers, each within its C type's range."""
    import json
    import os
    path = os.path.join(root, QUANT_TABLES_JSON)
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError) as e:
        raise SpecError(f"{QUANT_TABLES_JSON}: {e}")
    out, errors = {}, []
    for name in quant_tables_used():
        vals = data.get(name)
        lo, hi = TABLE_CTYPE_RANGE[QUANT_TABLES[name]]
        if not isinstance(vals, list) or not vals:
            errors.append(f"{QUANT_TABLES_JSON}: no table {name}")
        elif not all(isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi for v in vals):
            errors.append(f"{QUANT_TABLES_JSON}: table {name} holds a value outside {QUANT_TABLES[name]}")
        else:
            out[name] = vals
    if errors:
        raise SpecError("table errors:\n  " + "\n  ".join(errors))
    return out, data.get("_source", "")


# --- GPU shaders of the quantized formats ------------------------------------------------------
# For each format of GPU_QUANT_FORMATS: dequant_<fmt> (blocks to f32, bit-exact with the CPU's
# dequant kernel) and mul_mat_<fmt> (the contract's mul_mat over W in the GGUF layout and X in the
# format's partner, each block's dot as the CPU's scalar vec_dot); for each partner of
# GPU_QUANT_PARTNERS, quantize_<partner> (f32 columns to partner blocks, bytes equal to the CPU's
# activation quantizer). Templates: templates/gpu/{mul_mat_q,dequant_q,quantize_q8}.comp.j2 with
# the per-format decode pieces templates/gpu/qformats/<fmt>.glsl.j2.
GPU_QUANT_FORMATS = ("q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q4_K", "q5_K", "q6_K", "iq4_nl",
                     "iq4_xs", "mxfp4", "q2_K", "q3_K", "nvfp4", "q1_0")
GPU_QUANT_PARTNERS = ("q8_0", "q8_1", "q8_K")


def gpu_quant_shaders():
    """The GPU_SHADERS rows of the quantized formats. Template parameters: fmt (the format's name),
    op, includes (the templates it includes, for the generated file's header)."""
    out = []
    common = "gpu/quant_common.glsl.j2"
    for name in GPU_QUANT_FORMATS:
        piece = f"gpu/qformats/{name}.glsl.j2"
        out.append(GpuShader(
            f"mul_mat_{name}", "mul_mat_q.comp.j2",
            (("fmt", name), ("op", "mul_mat"), ("includes", (common, piece))),
            local=64, push=GPU_MUL_MAT_PUSH, bindings=3, rows=1, cols=1))
        out.append(GpuShader(
            f"dequant_{name}", "dequant_q.comp.j2",
            (("fmt", name), ("op", "dequant"), ("includes", (common, piece))),
            local=64, push=GPU_DEQUANT_PUSH, bindings=2))
    for name in GPU_QUANT_PARTNERS:
        out.append(GpuShader(
            f"quantize_{name}", "quantize_q8.comp.j2",
            (("fmt", name), ("op", "quantize"), ("includes", (common,))),
            local=32, push=GPU_QUANTIZE_Q8_PUSH, bindings=2))
    return tuple(out)


# dequant_<fmt>: nrows rows of K elements, w_* in bytes, y_* in floats; workgroups: x over the
# elements (local size each), y (+ z) over the rows.
GPU_DEQUANT_PUSH = ("uint nrows", "uint K", "uint w_off", "uint w_row", "uint y_off", "uint y_row")
# quantize_<partner>: ncols columns of K floats, x_* in floats, y_* in bytes; workgroups: x over the
# blocks of a column, y (+ z) over the columns.
GPU_QUANTIZE_Q8_PUSH = ("uint K", "uint ncols", "uint x_off", "uint x_col", "uint y_off", "uint y_col")


def gpu_quant_tables():
    """{name: values} of QUANT_TABLES, for the shaders' lookup tables (cached)."""
    global _GPU_QUANT_TABLES
    if _GPU_QUANT_TABLES is None:
        import os
        _GPU_QUANT_TABLES = load_quant_tables(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))[0]
    return _GPU_QUANT_TABLES


_GPU_QUANT_TABLES = None


def validate_gpu_quant(pieces):
    """Stops the generator when GPU_QUANT_FORMATS and the decode pieces of templates/gpu/qformats
    (pieces: their format names; kquant_scales, shared by q4_K and q5_K, is not one) disagree, or a
    format's partner has no quantize shader."""
    errors = []
    for name in GPU_QUANT_FORMATS:
        f = FORMAT_BY_NAME.get(name)
        if f is None or not f.quantized:
            errors.append(f"GPU_QUANT_FORMATS: {name} is not a quantized format")
            continue
        if name not in pieces:
            errors.append(f"GPU_QUANT_FORMATS: {name} has no templates/gpu/qformats/{name}.glsl.j2")
        if f.partner not in GPU_QUANT_PARTNERS:
            errors.append(f"GPU_QUANT_FORMATS: {name}'s partner {f.partner} is not in GPU_QUANT_PARTNERS")
    for name in sorted(set(pieces) - set(GPU_QUANT_FORMATS)):
        errors.append(f"templates/gpu/qformats/{name}.glsl.j2: {name} is not in GPU_QUANT_FORMATS")
    for name in GPU_QUANT_PARTNERS:
        if FORMAT_BY_NAME[name].partner != name:
            errors.append(f"GPU_QUANT_PARTNERS: {name} is not an activation format (its partner is itself)")
    if errors:
        raise SpecError("GPU quantized-format errors:\n  " + "\n  ".join(errors))


def block_offsets(fmt):
    """[(field name, byte offset)] of fmt's block layout, in memory order."""
    out, off = [], 0
    for name, ftype, count in fmt.fields:
        out.append((name, off))
        off += FIELD_TYPES[ftype][1] * count
    if off != fmt.size:
        raise SpecError(f"{fmt.name}: fields take {off} bytes, the block {fmt.size}")
    return out


# mul_mat_tiled_<fmt> (templates/gpu/mul_mat_tiled.comp.j2), for every format with a mul_mat_<fmt>:
# the same product and push constants, one workgroup per tile of GPU_TILE rows x columns, K walked
# one block of the format at a time (f32/f16/bf16: GPU_TILE_BK elements) through shared memory.
# 32 x 32 over 256 invocations (4 outputs each): within Vulkan's minimum limits (256 invocations,
# 16 KiB of shared memory: at most 32 * (210 + 292) bytes, q6_K against q8_K). The host takes it for
# passes of at least OXL_GPU_TILED_MIN_COLS columns (src/gpu/gpu_quant.h).
GPU_TILE = (32, 32)
GPU_TILE_LOCAL = 256
GPU_TILE_BK = 32


def gpu_tiled_shaders(shaders):
    """A mul_mat_tiled_<fmt> row for each mul_mat_<fmt> row of shaders."""
    out = []
    common = "gpu/quant_common.glsl.j2"
    for sh in shaders:
        if not sh.name.startswith("mul_mat_") or sh.name.startswith(("mul_mat_id_", "mul_mat_tiled_")):
            continue
        name = sh.param["fmt"]
        if name in ("f32", "f16", "bf16"):
            params = (("fmt", name), ("bk", GPU_TILE_BK),
                      ("includes", ("gpu/common.glsl.j2", "gpu/ggml_order.glsl.j2")))
        else:
            f = FORMAT_BY_NAME[name]
            pf = FORMAT_BY_NAME[f.partner]
            shared = GPU_TILE[0] * f.size + GPU_TILE[1] * (f.blck // pf.blck) * pf.size
            if shared > 16384:
                raise SpecError(f"mul_mat_tiled_{name}: {shared} bytes of shared memory (Vulkan's minimum is 16384)")
            params = (("fmt", name), ("op", "mul_mat"),
                      ("includes", (common, f"gpu/qformats/{name}.glsl.j2")))
        out.append(GpuShader(f"mul_mat_tiled_{name}", "mul_mat_tiled.comp.j2", params, local=GPU_TILE_LOCAL,
                             push=GPU_MUL_MAT_PUSH, bindings=3, rows=GPU_TILE[0], cols=GPU_TILE[1]))
    return tuple(out)


GPU_SHADERS = GPU_SHADERS + gpu_quant_shaders()
GPU_SHADERS = GPU_SHADERS + gpu_tiled_shaders(GPU_SHADERS)


def gpu_moe_quant_shaders():
    """mul_mat_id_<fmt> for each format of GPU_QUANT_FORMATS: the chosen experts' products (the MoE
    block, arch/moe_gpu.c) with each block's dot as mul_mat_<fmt>'s; X in the format's partner,
    offsets and strides of X in bytes."""
    common = "gpu/quant_common.glsl.j2"
    return tuple(GpuShader(f"mul_mat_id_{name}", "mul_mat_id_q.comp.j2",
                           (("fmt", name), ("op", "mul_mat"),
                            ("includes", (common, f"gpu/qformats/{name}.glsl.j2"))),
                           push=GPU_MUL_MAT_ID_PUSH, bindings=4)
                 for name in GPU_QUANT_FORMATS)


GPU_SHADERS = GPU_SHADERS + gpu_moe_quant_shaders()
GPU_SHADER_BY_NAME = {s.name: s for s in GPU_SHADERS}
