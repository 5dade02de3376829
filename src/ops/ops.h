/* The model math shared by the architecture families: norms, RoPE, activations, the Hadamard
 * rotation and attention. Each reproduces the ggml op llama.cpp's graph uses (ggml/src/ggml-cpu/ops.cpp,
 * vec.h), including where ggml accumulates in double or rounds through fp16, so logits track
 * llama.cpp's to float rounding. Activations are column-major batches: a (d, n) buffer holds n
 * tokens of d floats each. */
#ifndef OXL_OPS_H
#define OXL_OPS_H

#include "act.h"
#include "attention.h"
#include "hadamard.h"
#include "norm.h"
#include "rope.h"

#endif
