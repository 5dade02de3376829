"""`oxillama run --mmproj M --image golden/mm/image.png -p '<__media__>\\nDescribe:' -n 8 --temp 0`
must print the prompt and then exactly llama.cpp's 8 greedy tokens of the golden file (its `greedy`
tensor, each id turned into its SentencePiece text from the text model's vocabulary: U+2581 is a
space, <0xNN> a byte), and exit 0.
With `chat`: `run -cnv` with a template that writes each message with a newline after its marker,
fed `/image IMAGE` and `Describe:`, must print the same 8 tokens as its reply (the rendered turn is
the same prompt).
With `nomarker`: the prompt without its leading marker, which puts the image first (llama-mtmd-cli's
rule), so the same sequence and the same 8 tokens after the prompt.
usage: check_mm_run.py OXILLAMA GOLDEN_GGUF TEXT_MODEL MMPROJ IMAGE [chat|nomarker]"""
import os
import struct
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from gguf_kv import Gguf  # noqa: E402


def piece(text):
    if len(text) == 6 and text.startswith("<0x") and text.endswith(">"):
        return bytes([int(text[3:5], 16)])
    return text.replace("\u2581", " ").encode()


def main():
    binary, golden_path, model_path, mmproj, image = sys.argv[1:6]
    g = Gguf(golden_path)
    ne, _, raw = g.tensor["greedy"]
    greedy = struct.unpack("<%di" % ne[0], raw)
    vocab = Gguf(model_path, with_tensors=False).meta["tokenizer.ggml.tokens"]
    prompt = g.meta["golden.prompt"]
    want = prompt.encode() + b"".join(piece(vocab[t]) for t in greedy)
    reply = b"".join(piece(vocab[t]) for t in greedy)
    cmd = [binary, "run", "-m", model_path, "--mmproj", mmproj, "-n", str(len(greedy)), "--temp", "0",
           "-ctk", "f32", "-ctv", "f32", "-fa", "off", "-t", "2"]
    stdin = None
    if sys.argv[6:] == ["chat"]:
        marker = g.meta["golden.image_marker"]
        if prompt != marker + "\nDescribe:":
            print("FAIL  the golden's prompt %r is not the marker, a newline and Describe:" % prompt)
            return 1
        cmd += ["-cnv", "--chat-template",
                "{%% for m in messages %%}{{ m.content | replace('%s', '%s\\n') }}{%% endfor %%}" % (marker, marker)]
        stdin = ("/image %s\nDescribe:\n" % image).encode()
        want = b"\n> " + image.encode() + b" image loaded\n\n> " + reply + b"\n\n> "
    else:
        if sys.argv[6:] == ["nomarker"]:
            marker = g.meta["golden.image_marker"]
            if not prompt.startswith(marker) or marker in prompt[len(marker):]:
                print("FAIL  the golden's prompt %r does not start with its one marker" % prompt)
                return 1
            prompt = prompt[len(marker):]
            want = prompt.encode() + reply
        cmd += ["--image", image, "-p", prompt]
    r = subprocess.run(cmd, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    name = os.path.basename(golden_path)
    if r.returncode != 0:
        print("FAIL  %s: exit status %d\n%s" % (name, r.returncode, r.stderr.decode(errors="replace")))
        return 1
    if r.stdout != want:
        print("FAIL  %s: greedy ids %s\n  want: %r\n  got:  %r" % (name, list(greedy), want, r.stdout))
        return 1
    print("PASS  %s: %r" % (name, r.stdout))
    return 0


if __name__ == "__main__":
    sys.exit(main())
