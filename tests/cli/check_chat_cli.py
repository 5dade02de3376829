#!/usr/bin/env python3
"""`oxillama run -cnv` against llama.cpp's chat renderings: one user line (and -sys) fed on stdin,
`/exit` after it; with --verbose-prompt the CLI prints on stderr the text the model is given and
its tokens. That text must be byte for byte the reference rendering of the same conversation:

- `--chat-template-file FILE` / `--chat-template JINJA`: golden/chat-templates/<model>/<case>.txt
  (Python Jinja2 as HuggingFace's apply_chat_template; cases.json's conversations user_gen and
  system_user_gen, bos_token "<s>" and eos_token "</s>" as stories260K's vocabulary has them);
- `--chat-template NAME` (a built-in format): golden/chat-builtin's llama.cpp rendering
  (`expected_builtin`) of [system "You are a helpful assistant", user "Hello", assistant "Hi there",
  ...] up to where the assistant's "Hi there" starts: the rendering of the first two messages with
  the generation prompt, for formats whose generation prompt is the assistant turn's header.

The BOS token (stories260K adds it) is the first token and its text "<s>" is not repeated in the
text when the rendering starts with it. A template that raises must end the chat with exit status 1
and the template's message. The exit status is checked in every case.

usage: check_chat_cli.py OXILLAMA MODEL GOLDEN_DIR CASE   (CASE "list" prints the case names)
"""
import json
import os
import re
import subprocess
import sys
import tempfile

BOS = "<s>"
BUILTIN_CONV = ("You are a helpful assistant", "Hello")

# name: (template option, template source, system prompt, user line, expectation)
#   expectation: ("jinja", model, case) | ("builtin", llama.cpp test case name) | ("error", text)
CASES = {
    "jinja-file-qwen2.5-user": ("file", "Qwen-Qwen2.5-7B-Instruct", None, "Hello!",
                                ("jinja", "Qwen-Qwen2.5-7B-Instruct", "user_gen")),
    "jinja-file-qwen2.5-sys": ("file", "Qwen-Qwen2.5-7B-Instruct", "You are a terse assistant.", "What is 2+2?",
                               ("jinja", "Qwen-Qwen2.5-7B-Instruct", "system_user_gen")),
    "jinja-file-r1-llama-sys": ("file", "deepseek-ai-DeepSeek-R1-Distill-Llama-8B", "You are a terse assistant.",
                                "What is 2+2?", ("jinja", "deepseek-ai-DeepSeek-R1-Distill-Llama-8B", "system_user_gen")),
    "jinja-file-gemma2-user": ("file", "google-gemma-2-2b-it", None, "Hello!",
                               ("jinja", "google-gemma-2-2b-it", "user_gen")),
    "jinja-text-phi3.5-sys": ("text", "microsoft-Phi-3.5-mini-instruct", "You are a terse assistant.", "What is 2+2?",
                              ("jinja", "microsoft-Phi-3.5-mini-instruct", "system_user_gen")),
    "jinja-file-gemma2-sys-raises": ("file", "google-gemma-2-2b-it", "You are a terse assistant.", "What is 2+2?",
                                     ("error", "google-gemma-2-2b-it", "system_user_gen")),
    "template-file-missing": ("file", "no-such-model", None, "Hello!", ("missing",)),
    # plain `run --verbose-prompt`: llama.cpp's token ids of "Once upon a time" (the tokens tensor of
    # golden/models/stories260K.once.gguf)
    "run-once-ids": ("run", "Once upon a time", None, None, ("ids", [1, 403, 407, 261, 378])),
    "builtin-chatml-sys": ("name", "chatml", BUILTIN_CONV[0], BUILTIN_CONV[1],
                           ("builtin", "teknium/OpenHermes-2.5-Mistral-7B")),
    "builtin-llama3-sys": ("name", "llama3", BUILTIN_CONV[0], BUILTIN_CONV[1], ("builtin", "Llama-3")),
    "builtin-phi3-sys": ("name", "phi3", BUILTIN_CONV[0], BUILTIN_CONV[1], ("builtin", "Phi-3-mini")),
    "builtin-gemma-sys": ("name", "gemma", BUILTIN_CONV[0], BUILTIN_CONV[1], ("builtin", "google/gemma-7b-it")),
}


def fail(msg):
    print("FAIL  " + msg)
    return 1


def expected_text(golden, exp):
    if exp[0] == "jinja":
        with open(os.path.join(golden, "chat-templates", exp[1], exp[2] + ".txt"), encoding="utf-8", newline="") as f:
            return f.read()
    with open(os.path.join(golden, "chat-builtin", "llama-cpp-test-chat-template.json"), encoding="utf-8") as f:
        d = json.load(f)
    conv = d["conversation"]
    assert [m["content"] for m in conv[:2]] == list(BUILTIN_CONV) and conv[2]["content"] == "Hi there", conv[:3]
    (case,) = [c for c in d["cases"] if c["name"] == exp[1]]
    text = case["expected_builtin"]
    assert text.count("Hi there") == 1, text
    return text[:text.index("Hi there")]


def check_run_ids(oxl, model, name, prompt, ids):
    r = subprocess.run([oxl, "run", "-m", model, "-p", prompt, "-n", "2", "--temp", "0", "-t", "1",
                        "--verbose-prompt"], capture_output=True, timeout=120)
    err = r.stderr.decode("utf-8", "replace")
    print("%s: exit status %d" % (name, r.returncode))
    if r.returncode != 0:
        return fail("exit status %d, want 0\n%s" % (r.returncode, err))
    m = re.search(r"^prompt: '(.*?)'\nnumber of tokens in prompt = (\d+)\n((?: *\d+ -> '.*'\n)*)", err, re.M)
    if not m or m.group(1) != prompt:
        return fail("no --verbose-prompt block for %r on stderr:\n%s" % (prompt, err))
    got = [int(l.split(" -> ")[0]) for l in m.group(3).splitlines()]
    if int(m.group(2)) != len(ids) or got != ids:
        return fail("token ids %s (count %s), llama.cpp's %s" % (got, m.group(2), ids))
    if not r.stdout.startswith(prompt.encode()):
        return fail("stdout does not start with the prompt: %r" % r.stdout)
    print("PASS  %s: %s" % (name, got))
    return 0


def main():
    oxl, model, golden, name = sys.argv[1:5]
    if name == "list":
        print("\n".join(CASES))
        return 0
    opt, src, system, user, exp = CASES[name]
    if opt == "run":
        return check_run_ids(oxl, model, name, src, exp[1])
    args = [oxl, "run", "-m", model, "-cnv", "--verbose-prompt", "-n", "4", "--temp", "0", "-t", "1", "-c", "512"]
    if system is not None:
        args += ["-sys", system]
    tmpl_path = os.path.join(golden, "chat-templates", src, "template.jinja")
    if opt == "file":
        args += ["--chat-template-file", tmpl_path]
    elif opt == "text":
        with open(tmpl_path, encoding="utf-8", newline="") as f:
            args += ["--chat-template", f.read()]
    else:
        args += ["--chat-template", src]
    with tempfile.TemporaryFile() as stdin:
        stdin.write((user + "\n/exit\n").encode())
        stdin.seek(0)
        r = subprocess.run(args, stdin=stdin, capture_output=True, timeout=120)
    out, err = r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")
    print("%s: exit status %d" % (name, r.returncode))

    if exp[0] == "missing":
        if r.returncode == 0 or tmpl_path not in err or "prompt: '" in err:
            return fail("a missing --chat-template-file: exit status %d, stderr:\n%s" % (r.returncode, err))
        print("PASS  %s: exit status %d naming %s" % (name, r.returncode, tmpl_path))
        return 0

    if exp[0] == "error":
        with open(os.path.join(golden, "chat-templates", exp[1], exp[2] + ".error"), encoding="utf-8") as f:
            message = f.read().strip().split(": ", 1)[1]  # "<exception class>: <message>"
        if r.returncode != 1:
            return fail("exit status %d, want 1 (the template raised)\n%s" % (r.returncode, err))
        if "error: chat template:" not in err or message not in err:
            return fail("stderr lacks the template's message %r:\n%s" % (message, err))
        if "prompt: '" in err:
            return fail("a prompt was printed although the template raised:\n%s" % err)
        print("PASS  %s: exit status 1 with %r" % (name, message))
        return 0

    want = expected_text(golden, exp)
    if r.returncode != 0:
        return fail("exit status %d, want 0\n%s" % (r.returncode, err))
    m = re.search(r"^prompt: '(.*?)'\nnumber of tokens in prompt = (\d+)\n", err, re.S | re.M)
    if not m:
        return fail("no --verbose-prompt block on stderr:\n%s" % err)
    if err.count("\nprompt: '") + err.startswith("prompt: '") != 1:
        return fail("more than one prompt printed for one user turn:\n%s" % err)
    got, n_tok = m.group(1), int(m.group(2))
    full = BOS + got if want.startswith(BOS) else got
    if full != want:
        return fail("the model is given\n%r\nllama.cpp's rendering is\n%r" % (full, want))
    token_lines = re.findall(r"^ *(\d+) -> '", err[m.end():], re.M)
    if len(token_lines) != n_tok or n_tok < len(user):
        return fail("%d token lines for %d tokens:\n%s" % (len(token_lines), n_tok, err))
    if token_lines[0] != "1" or not err[m.end():].startswith("     1 -> '<s>'\n"):
        return fail("the first token is not BOS (1 -> '<s>'):\n%s" % err[m.end():][:200])
    # stdout: the "> " prompt, the reply (the model's own), a newline, the prompt again before /exit
    if not out.startswith("\n> ") or not out.endswith("\n\n> ") or out.count("\n> ") < 2:
        return fail("stdout is not the chat's turns:\n%r" % out)
    print("PASS  %s: prompt of %d bytes, %d tokens, = %s" % (name, len(full), n_tok, "/".join(exp[1:])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
