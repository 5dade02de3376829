/* oxillama: the command line. One verb per subcommand, each in its own file. */
#include "cli.h"
#include "kernels.h"

#include <stdio.h>
#include <string.h>

typedef struct verb {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *help;
} verb;

static const verb verbs[] = {
    {"run", oxl_cmd_run, "generate text from a prompt"},
    {"info", oxl_cmd_info, "show a GGUF file's metadata and tensors"},
    {"tokenize", oxl_cmd_tokenize, "show the tokens of a text"},
    {"embed", oxl_cmd_embed, "embeddings of texts, as llama-embedding"},
    {"perplexity", oxl_cmd_perplexity, "perplexity and KL divergence over a text file"},
    {"bench", oxl_cmd_bench, "speed, as llama-bench measures it"},
    {"golden", oxl_cmd_golden, "check parity with llama.cpp reference files"},
    {"serve", oxl_cmd_serve, "OpenAI-compatible HTTP server"},
    {"quantize", oxl_cmd_quantize, "convert a GGUF model to a quantized file type"},
    {"gguf-split", oxl_cmd_gguf_split, "split a GGUF model into parts or merge them, as llama-gguf-split"},
    {"imatrix", oxl_cmd_imatrix, "importance matrix for quantization, as llama-imatrix"},
    {"export-lora", oxl_cmd_export_lora, "merge LoRA adapters into a model, as llama-export-lora"},
    {"version", oxl_cmd_version, "version, git commit, compiler and kernel ISA (also --version)"},
};

static void usage(FILE *f) {
    fprintf(f, "usage: oxillama <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++) {
        fprintf(f, "  %-12s %s\n", verbs[i].name, verbs[i].help);
    }
    fprintf(f, "\n`oxillama <command> --help` shows a command's options; `oxillama --version` the version.\n");
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 1 : 0;
    }
    oxl_error err;
    if (oxl_isa_env_check(&err) < 0) {
        fprintf(stderr, "oxillama: %s\n", err.msg);
        return 2;
    }
    if (!strcmp(argv[1], "--version")) {
        return oxl_cmd_version(argc - 1, argv + 1);
    }
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++) {
        if (!strcmp(argv[1], verbs[i].name)) {
            return verbs[i].fn(argc - 1, argv + 1);
        }
    }
    fprintf(stderr, "oxillama: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 1;
}
