/* oxillama._oxillama — the CPython binding of the public C API (include/oxillama.h).
 *
 * Low-level types, one per library object; oxillama/__init__.py builds the llama-cpp-python-shaped
 * Llama class on top of them:
 *   Model(path, use_mmap=True, use_mlock=False, repack=True, n_gpu_layers=0, main_gpu=-1)   oxl_model
 *   Context(model, n_ctx=0, n_batch=512, n_threads=0, ...)    oxl_ctx (keeps its Model alive)
 *   Sampler(temp, top_k, top_p, min_p, seed, penalties, ...)   oxl_sampler (the whole chain)
 *   Detok(model)                                              oxl_detok (streaming, whole characters)
 * Library failures raise oxillama.OxlError (a RuntimeError) with the library's oxl_error message;
 * a model file that does not exist raises FileNotFoundError with that message. Logits and embeddings
 * are returned as memoryviews (format 'f') over copies, so they stay valid after the next decode.
 * Decoding and model loading run without the GIL; a Context refuses a second call while one runs. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "oxillama.h"

static PyObject *OxlError;

/* Casts a METH_VARARGS|METH_KEYWORDS function to PyCFunction without -Wcast-function-type. */
#define KW_METH(f) ((PyCFunction)(void (*)(void))(f))

static PyObject *raise_oxl(const oxl_error *err, const char *fallback) {
    PyErr_SetString(OxlError, err->msg[0] ? err->msg : fallback);
    return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Floats: an immutable float32 vector exposing the buffer protocol (the values are a copy)
 * ------------------------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD Py_ssize_t n;
    Py_ssize_t shape[1];
    Py_ssize_t strides[1];
    float v[];
} FloatsObject;

static int floats_getbuffer(PyObject *self, Py_buffer *view, int flags) {
    FloatsObject *f = (FloatsObject *)self;
    if ((flags & PyBUF_WRITABLE) == PyBUF_WRITABLE) {
        PyErr_SetString(PyExc_BufferError, "oxillama float buffers are read-only");
        view->obj = NULL;
        return -1;
    }
    view->obj = Py_NewRef(self);
    view->buf = f->v;
    view->len = f->n * (Py_ssize_t)sizeof(float);
    view->readonly = 1;
    view->itemsize = sizeof(float);
    view->format = (flags & PyBUF_FORMAT) ? "f" : NULL;
    view->ndim = 1;
    view->shape = (flags & PyBUF_ND) ? f->shape : NULL;
    view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? f->strides : NULL;
    view->suboffsets = NULL;
    view->internal = NULL;
    return 0;
}

static PyBufferProcs floats_as_buffer = {.bf_getbuffer = floats_getbuffer};

static PyTypeObject FloatsType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "oxillama._oxillama.Floats",
    .tp_basicsize = sizeof(FloatsObject),
    .tp_itemsize = sizeof(float),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A read-only float32 vector (buffer protocol); wrap it with memoryview().",
    .tp_as_buffer = &floats_as_buffer,
};

/* A memoryview over a copy of n floats. */
static PyObject *floats_view(const float *v, Py_ssize_t n) {
    FloatsObject *f = PyObject_NewVar(FloatsObject, &FloatsType, n);
    if (!f) {
        return NULL;
    }
    f->n = n;
    f->shape[0] = n;
    f->strides[0] = sizeof(float);
    memcpy(f->v, v, (size_t)n * sizeof(float));
    PyObject *mv = PyMemoryView_FromObject((PyObject *)f);
    Py_DECREF(f);
    return mv;
}

/* ---------------------------------------------------------------------------------------------
 * Model
 * ------------------------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD oxl_model *model;
} ModelObject;

static PyTypeObject ModelType;

static int model_init(ModelObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"path", "use_mmap", "use_mlock", "repack", "n_gpu_layers", "main_gpu", NULL};
    PyObject *path_obj = NULL;
    int use_mmap = 1, use_mlock = 0, repack = 1, n_gpu_layers = 0, main_gpu = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|pppii:Model", kwlist, PyUnicode_FSConverter, &path_obj, &use_mmap,
                                     &use_mlock, &repack, &n_gpu_layers, &main_gpu)) {
        return -1;
    }
    if (self->model) {
        Py_DECREF(path_obj);
        PyErr_SetString(PyExc_RuntimeError, "Model is already loaded");
        return -1;
    }
    const char *path = PyBytes_AS_STRING(path_obj);
    oxl_model_params mp = oxl_model_default_params();
    mp.use_mmap = use_mmap != 0;
    mp.use_mlock = use_mlock != 0;
    mp.repack = repack != 0;
    mp.n_gpu_layers = n_gpu_layers;
    mp.main_gpu = main_gpu;
    oxl_error err = {{0}};
    oxl_model *m;
    int missing;
    Py_BEGIN_ALLOW_THREADS;
    m = oxl_model_load(path, &mp, &err);
    missing = !m && access(path, F_OK) != 0 && errno == ENOENT;
    Py_END_ALLOW_THREADS;
    if (!m) {
        if (missing) {
            PyObject *e =
                Py_BuildValue("(isN)", ENOENT, err.msg[0] ? err.msg : "no such file", PyUnicode_DecodeFSDefault(path));
            if (e) {
                PyErr_SetObject(PyExc_FileNotFoundError, e);
                Py_DECREF(e);
            }
        } else {
            PyErr_SetString(PyExc_ValueError, err.msg[0] ? err.msg : "failed to load the model");
        }
        Py_DECREF(path_obj);
        return -1;
    }
    Py_DECREF(path_obj);
    self->model = m;
    return 0;
}

static void model_dealloc(ModelObject *self) {
    oxl_model_free(self->model);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int model_ok(ModelObject *self) {
    if (!self->model) {
        PyErr_SetString(PyExc_RuntimeError, "Model is not loaded");
        return 0;
    }
    return 1;
}

#define MODEL_INT_GETTER(name, expr)                                                                                   \
    static PyObject *model_##name(ModelObject *self, PyObject *Py_UNUSED(ignored)) {                                   \
        if (!model_ok(self)) {                                                                                         \
            return NULL;                                                                                               \
        }                                                                                                              \
        return PyLong_FromLongLong((long long)(expr));                                                                 \
    }
MODEL_INT_GETTER(n_vocab, oxl_model_n_vocab(self->model))
MODEL_INT_GETTER(n_ctx_train, oxl_model_n_ctx_train(self->model))
MODEL_INT_GETTER(n_embd, oxl_model_n_embd(self->model))
MODEL_INT_GETTER(n_params, oxl_model_n_params(self->model))
MODEL_INT_GETTER(size, oxl_model_size(self->model))
MODEL_INT_GETTER(token_bos, oxl_token_bos(self->model))
MODEL_INT_GETTER(token_eos, oxl_token_eos(self->model))

static PyObject *model_has_decoder(ModelObject *self, PyObject *Py_UNUSED(ignored)) {
    if (!model_ok(self)) {
        return NULL;
    }
    return PyBool_FromLong(oxl_model_has_decoder(self->model));
}

static PyObject *model_desc(ModelObject *self, PyObject *Py_UNUSED(ignored)) {
    if (!model_ok(self)) {
        return NULL;
    }
    return PyUnicode_DecodeUTF8(oxl_model_desc(self->model), (Py_ssize_t)strlen(oxl_model_desc(self->model)),
                                "replace");
}

static PyObject *model_chat_template(ModelObject *self, PyObject *Py_UNUSED(ignored)) {
    if (!model_ok(self)) {
        return NULL;
    }
    const char *t = oxl_model_chat_template(self->model);
    if (!t) {
        Py_RETURN_NONE;
    }
    return PyUnicode_DecodeUTF8(t, (Py_ssize_t)strlen(t), "replace");
}

static PyObject *model_meta_val_str(ModelObject *self, PyObject *arg) {
    if (!model_ok(self)) {
        return NULL;
    }
    const char *key = PyUnicode_AsUTF8(arg);
    if (!key) {
        return NULL;
    }
    char small[256];
    int32_t n = oxl_model_meta_val_str(self->model, key, small, sizeof small);
    if (n < 0) {
        Py_RETURN_NONE;
    }
    if ((size_t)n < sizeof small) {
        return PyUnicode_DecodeUTF8(small, n, "replace");
    }
    char *buf = PyMem_Malloc((size_t)n + 1);
    if (!buf) {
        return PyErr_NoMemory();
    }
    oxl_model_meta_val_str(self->model, key, buf, (size_t)n + 1);
    PyObject *r = PyUnicode_DecodeUTF8(buf, n, "replace");
    PyMem_Free(buf);
    return r;
}

static PyObject *model_token_is_eog(ModelObject *self, PyObject *arg) {
    if (!model_ok(self)) {
        return NULL;
    }
    long t = PyLong_AsLong(arg);
    if (t == -1 && PyErr_Occurred()) {
        return NULL;
    }
    return PyBool_FromLong(t >= INT32_MIN && t <= INT32_MAX && oxl_token_is_eog(self->model, (oxl_token)t));
}

/* tokenize(text: bytes, add_special=True, parse_special=False) -> list[int] */
static PyObject *model_tokenize(ModelObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"text", "add_special", "parse_special", NULL};
    Py_buffer text;
    int add_special = 1, parse_special = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "y*|pp:tokenize", kwlist, &text, &add_special, &parse_special)) {
        return NULL;
    }
    if (!model_ok(self)) {
        PyBuffer_Release(&text);
        return NULL;
    }
    int32_t cap = text.len < INT32_MAX / 2 - 8 ? (int32_t)text.len + 8 : INT32_MAX / 2;
    oxl_token *toks = PyMem_Malloc((size_t)cap * sizeof(oxl_token));
    if (!toks) {
        PyBuffer_Release(&text);
        return PyErr_NoMemory();
    }
    int32_t n = oxl_tokenize(self->model, text.buf, (size_t)text.len, toks, cap, add_special, parse_special);
    if (n < 0 && n != INT32_MIN) {
        cap = -n;
        oxl_token *t2 = PyMem_Realloc(toks, (size_t)cap * sizeof(oxl_token));
        if (!t2) {
            PyMem_Free(toks);
            PyBuffer_Release(&text);
            return PyErr_NoMemory();
        }
        toks = t2;
        n = oxl_tokenize(self->model, text.buf, (size_t)text.len, toks, cap, add_special, parse_special);
    }
    PyBuffer_Release(&text);
    if (n < 0) {
        PyMem_Free(toks);
        PyErr_SetString(OxlError, "tokenize: invalid text");
        return NULL;
    }
    PyObject *list = PyList_New(n);
    for (int32_t i = 0; list && i < n; i++) {
        PyObject *v = PyLong_FromLong(toks[i]);
        if (!v) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, i, v);
    }
    PyMem_Free(toks);
    return list;
}

/* Appends the text of token t to a growing buffer. Returns 0, or -1 with an exception set. */
static int append_piece(const oxl_model *model, oxl_token t, bool special, char **buf, size_t *len, size_t *cap) {
    if (t < 0 || t >= oxl_model_n_vocab(model)) {
        PyErr_Format(PyExc_ValueError, "token id %d is out of range (n_vocab %d)", (int)t,
                     (int)oxl_model_n_vocab(model));
        return -1;
    }
    for (;;) {
        size_t room = *cap - *len;
        int32_t n = oxl_token_to_piece(model, t, *buf + *len, room > INT32_MAX ? INT32_MAX : (int32_t)room, special);
        if (n >= 0) {
            *len += (size_t)n;
            return 0;
        }
        size_t want = *len + (size_t)(-(int64_t)n);
        size_t ncap = *cap * 2 > want ? *cap * 2 : want;
        char *nb = PyMem_Realloc(*buf, ncap);
        if (!nb) {
            PyErr_NoMemory();
            return -1;
        }
        *buf = nb;
        *cap = ncap;
    }
}

/* detokenize(tokens, special=False) -> bytes: the pieces of the tokens, concatenated */
static PyObject *model_detokenize(ModelObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"tokens", "special", NULL};
    PyObject *tokens;
    int special = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|p:detokenize", kwlist, &tokens, &special)) {
        return NULL;
    }
    if (!model_ok(self)) {
        return NULL;
    }
    PyObject *seq = PySequence_Fast(tokens, "detokenize: tokens must be a sequence of ints");
    if (!seq) {
        return NULL;
    }
    size_t len = 0, cap = 64;
    char *buf = PyMem_Malloc(cap);
    PyObject *r = NULL;
    if (!buf) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        long t = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
        if (t == -1 && PyErr_Occurred()) {
            goto done;
        }
        if (t < INT32_MIN || t > INT32_MAX) {
            PyErr_Format(PyExc_ValueError, "token id %ld is out of range", t);
            goto done;
        }
        if (append_piece(self->model, (oxl_token)t, special != 0, &buf, &len, &cap) != 0) {
            goto done;
        }
    }
    r = PyBytes_FromStringAndSize(buf, (Py_ssize_t)len);
done:
    PyMem_Free(buf);
    Py_DECREF(seq);
    return r;
}

/* apply_chat_template(messages_json, tools_json=None, add_generation_prompt=True, template=None) -> str */
static PyObject *model_apply_chat_template(ModelObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"messages_json", "tools_json", "add_generation_prompt", "template", NULL};
    const char *messages, *tools = NULL, *tmpl = NULL;
    int add_gen = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "s|zpz:apply_chat_template", kwlist, &messages, &tools, &add_gen,
                                     &tmpl)) {
        return NULL;
    }
    if (!model_ok(self)) {
        return NULL;
    }
    char *out = NULL;
    oxl_error err = {{0}};
    if (oxl_chat_apply_template(self->model, tmpl, messages, tools, add_gen != 0, &out, &err) != 0) {
        return raise_oxl(&err, "chat template rendering failed");
    }
    PyObject *r = PyUnicode_DecodeUTF8(out, (Py_ssize_t)strlen(out), "replace");
    free(out);
    return r;
}

/* chat_parse(text, template=None, opts_json=None) -> str: the reply as an assistant message's JSON
 * (oxl_chat_parse: content, reasoning_content, tool_calls) */
static PyObject *model_chat_parse(ModelObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"text", "template", "opts_json", NULL};
    const char *text, *tmpl = NULL, *opts = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "s|zz:chat_parse", kwlist, &text, &tmpl, &opts)) {
        return NULL;
    }
    if (!model_ok(self)) {
        return NULL;
    }
    char *out = NULL;
    oxl_error err = {{0}};
    if (oxl_chat_parse(self->model, tmpl, text, opts, &out, &err) != 0) {
        return raise_oxl(&err, "chat reply parsing failed");
    }
    PyObject *r = PyUnicode_DecodeUTF8(out, (Py_ssize_t)strlen(out), "replace");
    free(out);
    return r;
}

/* chat_format(template=None) -> str: the reply format oxl_chat_parse picks ("Hermes 2 Pro", ...) */
static PyObject *model_chat_format(ModelObject *self, PyObject *args) {
    const char *tmpl = NULL;
    if (!PyArg_ParseTuple(args, "|z:chat_format", &tmpl)) {
        return NULL;
    }
    if (!model_ok(self)) {
        return NULL;
    }
    return PyUnicode_FromString(oxl_chat_format(self->model, tmpl));
}

static PyMethodDef model_methods[] = {
    {"chat_parse", KW_METH(model_chat_parse), METH_VARARGS | METH_KEYWORDS,
     "chat_parse(text, template=None, opts_json=None) -> assistant message JSON (oxl_chat_parse)"},
    {"chat_format", (PyCFunction)model_chat_format, METH_VARARGS,
     "chat_format(template=None) -> the reply format's name (oxl_chat_format)"},
    {"n_vocab", (PyCFunction)model_n_vocab, METH_NOARGS, "Vocabulary size."},
    {"n_ctx_train", (PyCFunction)model_n_ctx_train, METH_NOARGS, "Training context length."},
    {"n_embd", (PyCFunction)model_n_embd, METH_NOARGS, "Embedding width."},
    {"n_params", (PyCFunction)model_n_params, METH_NOARGS, "Elements of all tensors."},
    {"size", (PyCFunction)model_size, METH_NOARGS, "Bytes of all tensor data."},
    {"token_bos", (PyCFunction)model_token_bos, METH_NOARGS, "BOS token id (-1 if none)."},
    {"token_eos", (PyCFunction)model_token_eos, METH_NOARGS, "EOS token id (-1 if none)."},
    {"has_decoder", (PyCFunction)model_has_decoder, METH_NOARGS, "False for encoder-only embedding models."},
    {"desc", (PyCFunction)model_desc, METH_NOARGS, "One-line description."},
    {"chat_template", (PyCFunction)model_chat_template, METH_NOARGS, "tokenizer.chat_template, or None."},
    {"meta_val_str", (PyCFunction)model_meta_val_str, METH_O, "A GGUF metadata value as text, or None."},
    {"token_is_eog", (PyCFunction)model_token_is_eog, METH_O, "Whether a token ends generation."},
    {"tokenize", KW_METH(model_tokenize), METH_VARARGS | METH_KEYWORDS,
     "tokenize(text: bytes, add_special=True, parse_special=False) -> list[int]"},
    {"detokenize", KW_METH(model_detokenize), METH_VARARGS | METH_KEYWORDS,
     "detokenize(tokens, special=False) -> bytes"},
    {"apply_chat_template", KW_METH(model_apply_chat_template), METH_VARARGS | METH_KEYWORDS,
     "apply_chat_template(messages_json, tools_json=None, add_generation_prompt=True, template=None) -> str"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ModelType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "oxillama._oxillama.Model",
    .tp_basicsize = sizeof(ModelObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Model(path, use_mmap=True, use_mlock=False, repack=True, n_gpu_layers=0, main_gpu=-1): a loaded GGUF "
              "model (oxl_model); n_gpu_layers layers on the Vulkan device (-1: all).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)model_init,
    .tp_dealloc = (destructor)model_dealloc,
    .tp_methods = model_methods,
};

/* ---------------------------------------------------------------------------------------------
 * Context
 * ------------------------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD oxl_ctx *ctx;
    ModelObject *model;
    int busy; /* a decode runs without the GIL */
} ContextObject;

static int ctx_init(ContextObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"model",   "n_ctx",      "n_batch", "n_threads", "embeddings",
                             "pooling", "flash_attn", "type_k",  "type_v",    NULL};
    PyObject *model;
    oxl_ctx_params cp = oxl_ctx_default_params();
    int n_ctx = 0, n_batch = cp.n_batch, n_threads = 0, embeddings = 0, pooling = cp.pooling;
    int flash = cp.flash_attn, type_k = cp.type_k, type_v = cp.type_v;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!|iiipiiii:Context", kwlist, &ModelType, &model, &n_ctx, &n_batch,
                                     &n_threads, &embeddings, &pooling, &flash, &type_k, &type_v)) {
        return -1;
    }
    if (self->ctx) {
        PyErr_SetString(PyExc_RuntimeError, "Context is already created");
        return -1;
    }
    if (!model_ok((ModelObject *)model)) {
        return -1;
    }
    cp.n_ctx = n_ctx;
    cp.n_batch = n_batch;
    cp.n_threads = n_threads;
    cp.embeddings = embeddings != 0;
    cp.pooling = (oxl_pooling)pooling;
    cp.flash_attn = (oxl_flash_attn)flash;
    cp.type_k = (oxl_kv_type)type_k;
    cp.type_v = (oxl_kv_type)type_v;
    oxl_error err = {{0}};
    oxl_ctx *c = oxl_ctx_new(((ModelObject *)model)->model, &cp, &err);
    if (!c) {
        PyErr_SetString(PyExc_ValueError, err.msg[0] ? err.msg : "failed to create the context");
        return -1;
    }
    self->ctx = c;
    Py_INCREF(model);
    self->model = (ModelObject *)model;
    return 0;
}

static void ctx_dealloc(ContextObject *self) {
    oxl_ctx_free(self->ctx);
    Py_XDECREF(self->model);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int ctx_ok(ContextObject *self) {
    if (!self->ctx) {
        PyErr_SetString(PyExc_RuntimeError, "Context is not created");
        return 0;
    }
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "Context is decoding in another thread");
        return 0;
    }
    return 1;
}

/* decode(tokens, all_logits=False): evaluates tokens at positions n_past.. of sequence 0. */
static PyObject *ctx_decode(ContextObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"tokens", "all_logits", NULL};
    PyObject *tokens;
    int all_logits = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|p:decode", kwlist, &tokens, &all_logits)) {
        return NULL;
    }
    if (!ctx_ok(self)) {
        return NULL;
    }
    PyObject *seq = PySequence_Fast(tokens, "decode: tokens must be a sequence of ints");
    if (!seq) {
        return NULL;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n <= 0 || n > INT32_MAX) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "decode: tokens must hold at least one token");
        return NULL;
    }
    oxl_token *toks = PyMem_Malloc((size_t)n * sizeof(oxl_token));
    if (!toks) {
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        long t = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
        if ((t == -1 && PyErr_Occurred()) || t < INT32_MIN || t > INT32_MAX) {
            if (!PyErr_Occurred()) {
                PyErr_Format(PyExc_ValueError, "token id %ld is out of range", t);
            }
            PyMem_Free(toks);
            Py_DECREF(seq);
            return NULL;
        }
        toks[i] = (oxl_token)t;
    }
    Py_DECREF(seq);
    oxl_error err = {{0}};
    int rc;
    self->busy = 1;
    Py_BEGIN_ALLOW_THREADS;
    rc = oxl_decode(self->ctx, toks, (int32_t)n, all_logits != 0, &err);
    Py_END_ALLOW_THREADS;
    self->busy = 0;
    PyMem_Free(toks);
    if (rc != 0) {
        return raise_oxl(&err, "decode failed");
    }
    Py_RETURN_NONE;
}

/* logits(i=-1) -> memoryview of n_vocab float32 (a copy), or None when token i kept none */
static PyObject *ctx_logits(ContextObject *self, PyObject *args) {
    int i = -1;
    if (!PyArg_ParseTuple(args, "|i:logits", &i) || !ctx_ok(self)) {
        return NULL;
    }
    const float *l = oxl_get_logits(self->ctx, i);
    if (!l) {
        Py_RETURN_NONE;
    }
    return floats_view(l, oxl_model_n_vocab(self->model->model));
}

/* embeddings_seq(seq=0) / embeddings_ith(i=-1) -> memoryview of n_embd float32 (a copy), or None */
static PyObject *ctx_embeddings_seq(ContextObject *self, PyObject *args) {
    int s = 0;
    if (!PyArg_ParseTuple(args, "|i:embeddings_seq", &s) || !ctx_ok(self)) {
        return NULL;
    }
    const float *e = oxl_get_embeddings_seq(self->ctx, s);
    if (!e) {
        Py_RETURN_NONE;
    }
    return floats_view(e, oxl_model_n_embd(self->model->model));
}

static PyObject *ctx_embeddings_ith(ContextObject *self, PyObject *args) {
    int i = -1;
    if (!PyArg_ParseTuple(args, "|i:embeddings_ith", &i) || !ctx_ok(self)) {
        return NULL;
    }
    const float *e = oxl_get_embeddings_ith(self->ctx, i);
    if (!e) {
        Py_RETURN_NONE;
    }
    return floats_view(e, oxl_model_n_embd(self->model->model));
}

static PyObject *ctx_n_ctx(ContextObject *self, PyObject *Py_UNUSED(ignored)) {
    if (!ctx_ok(self)) {
        return NULL;
    }
    return PyLong_FromLong(oxl_ctx_n_ctx(self->ctx));
}

static PyObject *ctx_n_past(ContextObject *self, PyObject *Py_UNUSED(ignored)) {
    if (!ctx_ok(self)) {
        return NULL;
    }
    return PyLong_FromLong(oxl_ctx_n_past(self->ctx));
}

static PyObject *ctx_pooling(ContextObject *self, PyObject *Py_UNUSED(ignored)) {
    if (!ctx_ok(self)) {
        return NULL;
    }
    return PyLong_FromLong(oxl_ctx_pooling(self->ctx));
}

/* truncate(n_past): drops cached positions >= n_past (recurrent models: only 0 applies) */
static PyObject *ctx_truncate(ContextObject *self, PyObject *arg) {
    long n = PyLong_AsLong(arg);
    if ((n == -1 && PyErr_Occurred()) || !ctx_ok(self)) {
        return NULL;
    }
    if (n < 0 || n > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "truncate: n_past must be >= 0");
        return NULL;
    }
    oxl_ctx_truncate(self->ctx, (int32_t)n);
    Py_RETURN_NONE;
}

static PyMethodDef ctx_methods[] = {
    {"decode", KW_METH(ctx_decode), METH_VARARGS | METH_KEYWORDS,
     "decode(tokens, all_logits=False): evaluate tokens after the cached ones (the GIL is released)."},
    {"logits", (PyCFunction)ctx_logits, METH_VARARGS, "logits(i=-1) -> memoryview('f') of n_vocab floats, or None."},
    {"embeddings_seq", (PyCFunction)ctx_embeddings_seq, METH_VARARGS,
     "embeddings_seq(seq=0) -> memoryview('f') of the pooled embedding, or None."},
    {"embeddings_ith", (PyCFunction)ctx_embeddings_ith, METH_VARARGS,
     "embeddings_ith(i=-1) -> memoryview('f') of token i's embedding (pooling none), or None."},
    {"n_ctx", (PyCFunction)ctx_n_ctx, METH_NOARGS, "KV cache length in tokens."},
    {"n_past", (PyCFunction)ctx_n_past, METH_NOARGS, "Tokens in the KV cache."},
    {"pooling", (PyCFunction)ctx_pooling, METH_NOARGS, "The pooling in effect (oxl_pooling)."},
    {"truncate", (PyCFunction)ctx_truncate, METH_O, "truncate(n_past): drop cached positions >= n_past."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ContextType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "oxillama._oxillama.Context",
    .tp_basicsize = sizeof(ContextObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Context(model, n_ctx=0, n_batch=512, n_threads=0, embeddings=False, pooling=-1, flash_attn=-1, "
              "type_k=1, type_v=1): a KV cache and its threads (oxl_ctx).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)ctx_init,
    .tp_dealloc = (destructor)ctx_dealloc,
    .tp_methods = ctx_methods,
};

/* ---------------------------------------------------------------------------------------------
 * Sampler
 * ------------------------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD oxl_sampler *s;
    int32_t n_bias;
    oxl_token *bias_tok; /* logit_bias: added to the logits before the chain */
    float *bias_val;
    float *work; /* n_vocab logits with the bias */
    int32_t work_n;
} SamplerObject;

static void sampler_clear(SamplerObject *self) {
    oxl_sampler_free(self->s);
    free(self->bias_tok);
    free(self->bias_val);
    free(self->work);
    self->s = NULL;
    self->bias_tok = NULL;
    self->bias_val = NULL;
    self->work = NULL;
    self->n_bias = self->work_n = 0;
}

/* Sampler(temp=0.8, top_k=40, top_p=0.95, min_p=0.05, seed=random, penalty_last_n=64, ...,
 * samplers="", logit_bias=None): every field of oxl_sampler_params, by its name there. */
static int sampler_init(SamplerObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"temp",
                             "top_k",
                             "top_p",
                             "min_p",
                             "seed",
                             "penalty_last_n",
                             "penalty_repeat",
                             "penalty_freq",
                             "penalty_present",
                             "typ_p",
                             "top_n_sigma",
                             "xtc_probability",
                             "xtc_threshold",
                             "dynatemp_range",
                             "dynatemp_exponent",
                             "mirostat",
                             "mirostat_tau",
                             "mirostat_eta",
                             "dry_multiplier",
                             "dry_base",
                             "dry_allowed_length",
                             "dry_penalty_last_n",
                             "samplers",
                             "logit_bias",
                             "top_a",
                             "eta",
                             NULL};
    oxl_sampler_params sp = oxl_sampler_default_params();
    unsigned long long seed = sp.seed;
    const char *samplers = NULL;
    PyObject *bias = NULL;
    if (!PyArg_ParseTupleAndKeywords(
            args, kw, "|fiffKifffffffffiffffiizOff:Sampler", kwlist, &sp.temp, &sp.top_k, &sp.top_p, &sp.min_p, &seed,
            &sp.penalty_last_n, &sp.penalty_repeat, &sp.penalty_freq, &sp.penalty_present, &sp.typ_p, &sp.top_n_sigma,
            &sp.xtc_probability, &sp.xtc_threshold, &sp.dynatemp_range, &sp.dynatemp_exponent, &sp.mirostat,
            &sp.mirostat_tau, &sp.mirostat_eta, &sp.dry_multiplier, &sp.dry_base, &sp.dry_allowed_length,
            &sp.dry_penalty_last_n, &samplers, &bias, &sp.top_a, &sp.eta)) {
        return -1;
    }
    if (seed > 0xFFFFFFFFull) {
        PyErr_SetString(PyExc_ValueError, "seed must fit in 32 bits (0xFFFFFFFF: random)");
        return -1;
    }
    sp.seed = (uint32_t)seed;
    if (samplers) {
        if (strlen(samplers) >= sizeof sp.samplers) {
            PyErr_Format(PyExc_ValueError, "samplers: at most %zu letters", sizeof sp.samplers - 1);
            return -1;
        }
        strcpy(sp.samplers, samplers);
    }
    sampler_clear(self);
    if (bias && bias != Py_None) {
        if (!PyDict_Check(bias)) {
            PyErr_SetString(PyExc_TypeError, "logit_bias: expected a dict of token id -> bias");
            return -1;
        }
        Py_ssize_t n = PyDict_Size(bias), pos = 0;
        self->bias_tok = malloc(sizeof(oxl_token) * (size_t)(n + 1));
        self->bias_val = malloc(sizeof(float) * (size_t)(n + 1));
        if (!self->bias_tok || !self->bias_val) {
            PyErr_NoMemory();
            return -1;
        }
        PyObject *k, *v;
        while (PyDict_Next(bias, &pos, &k, &v)) {
            long t = PyLong_AsLong(k);
            double b = PyFloat_AsDouble(v);
            if (PyErr_Occurred()) {
                return -1;
            }
            if (t < 0 || t > INT32_MAX) {
                PyErr_Format(PyExc_ValueError, "logit_bias: %ld is not a token id", t);
                return -1;
            }
            self->bias_tok[self->n_bias] = (oxl_token)t;
            self->bias_val[self->n_bias++] = (float)b;
        }
    }
    self->s = oxl_sampler_new(&sp);
    if (!self->s) {
        PyErr_SetString(PyExc_ValueError, "Sampler: invalid parameters (samplers letters, mirostat 0..2, "
                                          "penalty_last_n / dry_penalty_last_n 0..65536)");
        return -1;
    }
    return 0;
}

static void sampler_dealloc(SamplerObject *self) {
    sampler_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* sample(ctx, i=-1) -> int: a token from the logits of token i of ctx's last decode */
static PyObject *sampler_sample(SamplerObject *self, PyObject *args) {
    PyObject *c;
    int i = -1;
    if (!PyArg_ParseTuple(args, "O!|i:sample", &ContextType, &c, &i)) {
        return NULL;
    }
    ContextObject *ctx = (ContextObject *)c;
    if (!self->s) {
        PyErr_SetString(PyExc_RuntimeError, "Sampler is not created");
        return NULL;
    }
    if (!ctx_ok(ctx)) {
        return NULL;
    }
    const float *l = oxl_get_logits(ctx->ctx, i);
    if (!l) {
        PyErr_SetString(OxlError, "sample: the last decode kept no logits for that token");
        return NULL;
    }
    const int32_t n_vocab = oxl_model_n_vocab(ctx->model->model);
    if (self->n_bias > 0) {
        if (self->work_n != n_vocab) {
            float *w = realloc(self->work, sizeof(float) * (size_t)n_vocab);
            if (!w) {
                return PyErr_NoMemory();
            }
            self->work = w;
            self->work_n = n_vocab;
        }
        memcpy(self->work, l, sizeof(float) * (size_t)n_vocab);
        for (int32_t k = 0; k < self->n_bias; k++) {
            if (self->bias_tok[k] >= n_vocab) {
                PyErr_Format(PyExc_ValueError, "logit_bias: token %d is not below n_vocab %d", self->bias_tok[k],
                             n_vocab);
                return NULL;
            }
            self->work[self->bias_tok[k]] += self->bias_val[k];
        }
        l = self->work;
    }
    return PyLong_FromLong(oxl_sampler_sample(self->s, l, n_vocab));
}

/* accept(token): a token of the context for the penalties and DRY (oxl_sampler_accept) */
static PyObject *sampler_accept(SamplerObject *self, PyObject *args) {
    int tok;
    if (!PyArg_ParseTuple(args, "i:accept", &tok)) {
        return NULL;
    }
    if (!self->s) {
        PyErr_SetString(PyExc_RuntimeError, "Sampler is not created");
        return NULL;
    }
    oxl_sampler_accept(self->s, tok);
    Py_RETURN_NONE;
}

/* dry_breakers(model, [str, ...]): DRY's sequence breakers (oxl_sampler_dry_breakers) */
static PyObject *sampler_dry_breakers(SamplerObject *self, PyObject *args) {
    PyObject *m, *list;
    if (!PyArg_ParseTuple(args, "O!O:dry_breakers", &ModelType, &m, &list)) {
        return NULL;
    }
    PyObject *seq = PySequence_Fast(list, "dry_breakers: expected a list of strings");
    if (!seq) {
        return NULL;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    const char **strs = calloc((size_t)n + 1, sizeof *strs);
    if (!strs) {
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        strs[k] = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(seq, k));
        if (!strs[k]) {
            free(strs);
            Py_DECREF(seq);
            return NULL;
        }
    }
    int32_t rc = self->s ? oxl_sampler_dry_breakers(self->s, ((ModelObject *)m)->model, strs, (int32_t)n) : -1;
    free(strs);
    Py_DECREF(seq);
    if (rc < 0) {
        PyErr_SetString(OxlError, "dry_breakers: the sampler is not created or memory ran out");
        return NULL;
    }
    Py_RETURN_NONE;
}

/* set_grammar(model, gbnf or None, root="root"): constrains sampling (oxl_sampler_set_grammar) */
static PyObject *sampler_set_grammar(SamplerObject *self, PyObject *args) {
    PyObject *m;
    const char *gbnf = NULL, *root = "root";
    if (!PyArg_ParseTuple(args, "O!z|s:set_grammar", &ModelType, &m, &gbnf, &root)) {
        return NULL;
    }
    if (!self->s) {
        PyErr_SetString(PyExc_RuntimeError, "Sampler is not created");
        return NULL;
    }
    char err[256] = "";
    if (oxl_sampler_set_grammar(self->s, ((ModelObject *)m)->model, gbnf, root, err, sizeof err) != 0) {
        PyErr_Format(PyExc_ValueError, "grammar: %s", err[0] ? err : "cannot be set");
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef sampler_methods[] = {
    {"set_grammar", (PyCFunction)sampler_set_grammar, METH_VARARGS,
     "set_grammar(model, gbnf, root='root'): GBNF grammar the samples follow (None removes it)"},
    {"sample", (PyCFunction)sampler_sample, METH_VARARGS, "sample(ctx, i=-1) -> token id"},
    {"accept", (PyCFunction)sampler_accept, METH_VARARGS,
     "accept(token): a prompt or kept token, for the penalties and DRY"},
    {"dry_breakers", (PyCFunction)sampler_dry_breakers, METH_VARARGS,
     "dry_breakers(model, [str]): DRY's sequence breakers"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject SamplerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "oxillama._oxillama.Sampler",
    .tp_basicsize = sizeof(SamplerObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Sampler(temp=0.8, top_k=40, top_p=0.95, min_p=0.05, seed=0xFFFFFFFF, penalty_last_n=64, "
              "penalty_repeat=1, penalty_freq=0, penalty_present=0, typ_p=1, top_n_sigma=-1, xtc_probability=0, "
              "xtc_threshold=0.1, dynatemp_range=0, dynatemp_exponent=1, mirostat=0, mirostat_tau=5, "
              "mirostat_eta=0.1, dry_multiplier=0, dry_base=1.75, dry_allowed_length=2, dry_penalty_last_n=64, "
              "samplers='', logit_bias=None, top_a=0, eta=0): llama.cpp's sampler chain (oxl_sampler_params; temp <= "
              "0: greedy).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)sampler_init,
    .tp_dealloc = (destructor)sampler_dealloc,
    .tp_methods = sampler_methods,
};

/* ---------------------------------------------------------------------------------------------
 * Detok: streaming detokenizer (whole UTF-8 characters only)
 * ------------------------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD ModelObject *model;
    oxl_detok d;
} DetokObject;

static int detok_init(DetokObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"model", NULL};
    PyObject *model;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!:Detok", kwlist, &ModelType, &model) ||
        !model_ok((ModelObject *)model)) {
        return -1;
    }
    Py_INCREF(model);
    Py_XSETREF(self->model, (ModelObject *)model);
    memset(&self->d, 0, sizeof self->d);
    return 0;
}

static void detok_dealloc(DetokObject *self) {
    Py_XDECREF(self->model);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *detok_push(DetokObject *self, PyObject *arg) {
    long t = PyLong_AsLong(arg);
    if (t == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (!self->model) {
        PyErr_SetString(PyExc_RuntimeError, "Detok is not created");
        return NULL;
    }
    if (t < 0 || t >= oxl_model_n_vocab(self->model->model)) {
        PyErr_Format(PyExc_ValueError, "token id %ld is out of range", t);
        return NULL;
    }
    char small[256];
    int32_t n = oxl_detok_push(&self->d, self->model->model, (oxl_token)t, small, sizeof small);
    if (n >= 0) {
        return PyBytes_FromStringAndSize(small, n);
    }
    int32_t need = -n;
    char *buf = PyMem_Malloc((size_t)need);
    if (!buf) {
        return PyErr_NoMemory();
    }
    n = oxl_detok_push(&self->d, self->model->model, (oxl_token)t, buf, need);
    PyObject *r = n >= 0 ? PyBytes_FromStringAndSize(buf, n) : (PyErr_SetString(OxlError, "detok: push failed"), NULL);
    PyMem_Free(buf);
    return r;
}

static PyObject *detok_flush(DetokObject *self, PyObject *Py_UNUSED(ignored)) {
    char buf[sizeof self->d.pending + 1];
    int32_t n = oxl_detok_flush(&self->d, buf, sizeof buf);
    if (n < 0) {
        PyErr_SetString(OxlError, "detok: flush failed");
        return NULL;
    }
    return PyBytes_FromStringAndSize(buf, n);
}

static PyMethodDef detok_methods[] = {
    {"push", (PyCFunction)detok_push, METH_O, "push(token) -> bytes: the complete characters so far."},
    {"flush", (PyCFunction)detok_flush, METH_NOARGS, "flush() -> bytes held back (an unfinished sequence)."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject DetokType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "oxillama._oxillama.Detok",
    .tp_basicsize = sizeof(DetokObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Detok(model): streaming detokenizer that never splits a UTF-8 character (oxl_detok).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)detok_init,
    .tp_dealloc = (destructor)detok_dealloc,
    .tp_methods = detok_methods,
};

/* ---------------------------------------------------------------------------------------------
 * Module
 * ------------------------------------------------------------------------------------------- */

/* json_schema_to_grammar(schema_json: str) -> str: llama.cpp's conversion (oxl_json_schema_to_grammar) */
static PyObject *py_json_schema_to_grammar(PyObject *self, PyObject *args) {
    (void)self;
    const char *schema;
    if (!PyArg_ParseTuple(args, "s:json_schema_to_grammar", &schema)) {
        return NULL;
    }
    char *out = NULL;
    oxl_error err = {{0}};
    if (oxl_json_schema_to_grammar(schema, &out, &err) != 0) {
        PyErr_SetString(PyExc_ValueError, err.msg[0] ? err.msg : "json schema: conversion failed");
        return NULL;
    }
    PyObject *r = PyUnicode_FromString(out);
    free(out);
    return r;
}

static PyMethodDef module_methods[] = {
    {"json_schema_to_grammar", py_json_schema_to_grammar, METH_VARARGS,
     "json_schema_to_grammar(schema_json) -> GBNF text, as llama.cpp's json_schema_to_grammar"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, .m_name = "oxillama._oxillama", .m_doc = "Binding of oxillama's C API (include/oxillama.h).",
    .m_size = -1,          .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__oxillama(void);
PyMODINIT_FUNC PyInit__oxillama(void) {
    PyTypeObject *types[] = {&FloatsType, &ModelType, &ContextType, &SamplerType, &DetokType};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        if (PyType_Ready(types[i]) < 0) {
            return NULL;
        }
    }
    PyObject *m = PyModule_Create(&module_def);
    if (!m) {
        return NULL;
    }
    OxlError = PyErr_NewExceptionWithDoc("oxillama._oxillama.OxlError",
                                         "A failure reported by the library (its oxl_error message).",
                                         PyExc_RuntimeError, NULL);
    if (!OxlError || PyModule_AddObjectRef(m, "OxlError", OxlError) < 0 ||
        PyModule_AddObjectRef(m, "Model", (PyObject *)&ModelType) < 0 ||
        PyModule_AddObjectRef(m, "Context", (PyObject *)&ContextType) < 0 ||
        PyModule_AddObjectRef(m, "Sampler", (PyObject *)&SamplerType) < 0 ||
        PyModule_AddObjectRef(m, "Detok", (PyObject *)&DetokType) < 0 ||
        PyModule_AddIntConstant(m, "SEED_RANDOM", (long)OXL_SEED_RANDOM) < 0 ||
        PyModule_AddStringConstant(m, "LIBRARY_VERSION", oxl_version()) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
