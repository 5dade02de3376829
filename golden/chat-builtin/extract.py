# Extracts the test vectors of llama.cpp's tests/test-chat-template.cpp (main_automated_tests):
# for each case the template text, llama.cpp's built-in rendering (expected_output) and the Jinja
# rendering (expected_output_jinja, or expected_output when empty), with the shared conversation.
import json, re, sys
src = open(sys.argv[1], encoding='utf-8').read()
start = src.index('std::vector<TestCase> test_cases {')
body = src[start + len('std::vector<TestCase> test_cases {'):]
toks = []
i = 0
while i < len(body):
    c = body[i]
    if body.startswith('/*', i):
        i = body.index('*/', i) + 2; continue
    if body.startswith('//', i):
        i = body.index('\n', i); continue
    if c.isspace(): i += 1; continue
    if body.startswith('U8C(', i):
        i += 4; continue
    if body.startswith('u8"', i):
        i += 2; continue
    if c == '"':
        j = i + 1; out = []
        while body[j] != '"':
            if body[j] == '\\':
                e = body[j+1]
                m = {'n': '\n', 't': '\t', '\\': '\\', '"': '"', "'": "'", 'r': '\r', '0': '\0'}
                if e in m: out.append(m[e]); j += 2
                else: raise SystemExit('escape ' + e)
            else:
                out.append(body[j]); j += 1
        s = ''.join(out)
        if toks and isinstance(toks[-1], tuple) and toks[-1][0] == 'S':
            toks[-1] = ('S', toks[-1][1] + s)   # adjacent literals concatenate
        else:
            toks.append(('S', s))
        i = j + 1; continue
    if c in '{},':
        toks.append(c); i += 1; continue
    if c == ')':
        i += 1; continue
    if c == ';':
        break
    m = re.match(r'[A-Za-z_]+', body[i:])
    if m:
        toks.append(('I', m.group())); i += len(m.group()); continue
    raise SystemExit('unexpected ' + body[i:i+20])
# parse nested braces
pos = 0
def parse():
    global pos
    assert toks[pos] == '{'; pos += 1
    items = []
    while toks[pos] != '}':
        if toks[pos] == ',': pos += 1; continue
        if toks[pos] == '{': items.append(parse()); continue
        t = toks[pos]; pos += 1
        items.append(t[1] if t[0] == 'S' else (t[1] == 'true'))
    pos += 1
    return items
cases = []
while pos < len(toks):
    if toks[pos] == '{':
        f = parse()
        case = {'name': f[0], 'template': f[1], 'expected_builtin': f[2],
                'expected_jinja': f[3] or f[2], 'bos_token': f[4] if len(f) > 4 else '', 'eos_token': f[5] if len(f) > 5 else '',
                'supported_with_jinja': f[6] if len(f) > 6 else True,
                'extra_conversation': [{'role': r, 'content': c} for r, c in (f[7] if len(f) > 7 else [])]}
        cases.append(case)
    else:
        pos += 1
conv = [{"role": "system", "content": "You are a helpful assistant"}, {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Hi there"}, {"role": "user", "content": "Who are you"},
        {"role": "assistant", "content": "   I am an assistant   "}, {"role": "user", "content": "Another question"}]
json.dump({"conversation": conv, "add_generation_prompt": True, "cases": cases}, sys.stdout, ensure_ascii=False, indent=1)
