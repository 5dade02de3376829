# Writes golden/grammars/integration-cases.txt from llama.cpp's tests/test-grammar-integration.cpp:
#   python3 tests/unit/grammar_cases_extract.py LLAMA_CPP/tests/test-grammar-integration.cpp > golden/grammars/integration-cases.txt
# Extracts the test_grammar(...) cases and the build-failure grammars of llama.cpp's
# tests/test-grammar-integration.cpp into a line format (see golden/grammars/README.md).
import re, sys
src = open(sys.argv[1], encoding='utf-8').read()

def lex(s, i):
    """C++ literal-ish tokens from s[i:]; yields (kind, value, end)."""
    out = []
    n = len(s)
    depth = 0
    while i < n:
        c = s[i]
        if s.startswith('//', i):
            i = s.index('\n', i)
            continue
        if c.isspace():
            i += 1; continue
        if s.startswith('R"""(', i):
            j = s.index(')"""', i + 5)
            out.append(('str', s[i + 5:j])); i = j + 4; continue
        if c == '"':
            j = i + 1; buf = ''
            while s[j] != '"':
                if s[j] == '\\':
                    e = s[j + 1]
                    m = {'n': '\n', 't': '\t', 'r': '\r', '\\': '\\', '"': '"', "'": "'", '0': '\0'}
                    if e in m: buf += m[e]; j += 2
                    elif e == 'x':
                        k = j + 2
                        while s[k] in '0123456789abcdefABCDEF': k += 1
                        buf += chr(int(s[j + 2:k], 16)); j = k
                    else: raise ValueError('escape ' + e)
                else:
                    buf += s[j]; j += 1
            out.append(('str', buf)); i = j + 1; continue
        m = re.match(r'token\((\d+)\)', s[i:])
        if m:
            out.append(('tok', int(m.group(1)))); i += m.end(); continue
        if c in '{}(),+;':
            out.append(('p', c)); i += 1
            if c == '(':
                depth += 1
            if c == ')':
                depth -= 1
                if depth < 0: return out, i
            continue
        raise ValueError('unexpected %r at %d' % (s[i:i + 30], i))
    return out, i

def esc(parts):
    r = ''
    for k, v in parts:
        if k == 'tok':
            r += '\\T{%d}' % v
        else:
            for ch in v:
                r += {'\\': '\\\\', '\n': '\\n', '\t': '\\t', '\r': '\\r'}.get(ch, ch)
    return r

cases = []
for m in re.finditer(r'\btest_grammar\(\s*\n', src):
    toks, _ = lex(src, m.end())
    # desc , grammar , { list } , { list } )
    items = []  # top-level groups
    cur = []
    lists = []
    i = 0
    args = []
    part = []
    depth = 0
    lst = None
    for k, v in toks:
        if k == 'p' and v == '{':
            depth += 1; lst = []; part = []
            continue
        if k == 'p' and v == '}':
            if part: lst.append(part)
            args.append(('list', lst)); depth -= 1; part = []; continue
        if k == 'p' and v == ',':
            if depth: lst.append(part); part = []
            elif part: args.append(('val', part)); part = []
            continue
        if k == 'p' and v == '+':
            continue
        if k == 'p' and v in '()':
            continue
        part.append((k, v))
    if part: args.append(('val', part))
    desc = ''.join(v for k, v in args[0][1])
    gram = ''.join(v for k, v in args[1][1])
    passing = [p for p in args[2][1] if p]
    failing = [p for p in args[3][1] if p]
    cases.append((desc, gram, passing, failing))

print('# llama.cpp tests/test-grammar-integration.cpp, test_grammar cases (golden/grammars/README.md)')
for desc, gram, passing, failing in cases:
    print('D ' + desc)
    print('G ' + esc([('str', gram)]))
    for p in passing: print('P ' + esc(p))
    for f in failing: print('F ' + esc(f))
# the grammars that must fail to build (test_failure_*)
for name in ['simple_str', 'medium_str', 'hard_str', 'hardest_str']:
    m = re.search(r'const std::string %s = R"""\((.*?)\)""";' % name, src, re.S)
    print('D left recursion (%s)' % name)
    print('X ' + esc([('str', m.group(1))]))
m = re.search(r'test_failure_missing_reference\(\).*?R"""\((.*?)\)"""', src, re.S)
print('D missing reference')
print('X ' + esc([('str', m.group(1))]))
