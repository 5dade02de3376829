#!/bin/sh
# ctest layers: the include rules of docs/architecture.md hold.
# 1. Each layer target's include path (its own folder plus those of the layers it links, as CMake
#    computes it) holds only folders that layer may include, per the table below.
# 2. No file of src/ or arch/ reaches another folder by a relative or absolute #include path.
# 3. The compiler agrees: with the gguf layer's include path, a header of arch/ is not found and
#    gguf.h is.
# 4. No project header shares its name with a system header.
# usage: check_layers.sh SOURCE_DIR GENERATED_DIR CC LAYER=DIR:DIR... ...
set -u
src=$1 gen=$2 cc=$3
shift 3
fail=0
allowed() {
    case $1 in
    oxl_generated) echo "GEN" ;;
    oxl_core) echo "src/core include" ;;
    oxl_kernels) echo "src/kernels src/core include GEN" ;;
    oxl_ops) echo "src/ops src/kernels src/core include GEN" ;;
    oxl_gpu) echo "src/gpu src/core include GEN" ;;
    oxl_gguf) echo "src/gguf src/core include GEN" ;;
    oxl_text) echo "src/text src/gguf src/core include GEN" ;;
    oxl_model) echo "src/model src/ops src/quantize src/text src/gguf src/kernels src/gpu src/core include GEN" ;;
    oxl_chat) echo "src/chat src/model src/ops src/text src/gguf src/kernels src/gpu src/core include GEN" ;;
    oxl_quantize) echo "src/quantize src/gguf src/kernels src/core include GEN" ;;
    oxl_image) echo "src/image src/core include" ;;
    oxl_mm) echo "src/mm src/image src/model src/ops src/quantize src/text src/gguf src/kernels src/gpu src/core include GEN" ;;
    oxl_check) echo "src/check src/mm src/image src/chat src/quantize src/model src/ops src/text src/gguf src/kernels src/gpu src/core include GEN" ;;
    oxl_arch) echo "arch src/quantize src/model src/ops src/text src/gguf src/kernels src/gpu src/core include GEN" ;;
    *) echo "?" ;;
    esac
}
n=0
for spec in "$@"; do
    layer=${spec%%=*}
    dirs=$(printf '%s' "${spec#*=}" | tr ':' ' ')
    ok=$(allowed "$layer")
    if [ "$ok" = "?" ]; then
        echo "FAIL  $layer: not in the table of tests/cli/check_layers.sh (docs/architecture.md)"
        fail=1
        continue
    fi
    for d in $dirs; do
        rel=$d
        [ "$d" = "$gen" ] && rel=GEN
        rel=${rel#"$src"/}
        case " $ok " in
        *" $rel "*) ;;
        *)
            echo "FAIL  $layer has $rel on its include path (allowed: $ok)"
            fail=1
            ;;
        esac
    done
    n=$((n + 1))
done
echo "layers: $n include paths checked"
[ "$n" -ge 13 ] || {
    echo "FAIL  expected the 13 layer targets, got $n"
    fail=1
}

bad=$(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"](\.\.|/)' "$src/src" "$src/arch" --include='*.[ch]' --include='*.inc')
if [ -n "$bad" ]; then
    echo "FAIL  includes by path:"
    echo "$bad"
    fail=1
fi

probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf '#include "arch.h"\n' >"$probe/up.c"
printf '#include "gguf.h"\n' >"$probe/own.c"
inc="-I$src/src/gguf -I$src/src/core -I$src/include -I$gen"
if "$cc" -fsyntax-only -D_GNU_SOURCE $inc "$probe/up.c" 2>"$probe/up.err"; then
    echo "FAIL  src/gguf can include arch.h"
    fail=1
else
    echo "upward include refused: $(grep -m1 'arch.h' "$probe/up.err")"
fi
if ! "$cc" -fsyntax-only -D_GNU_SOURCE $inc "$probe/own.c"; then
    echo "FAIL  src/gguf cannot include its own gguf.h"
    fail=1
fi
# 4. No project header is named like a header of the C library or the system (memory.h, time.h, …):
#    an upward include of such a name would find the system's header and compile instead of failing.
n_headers=0
for h in $(find "$src/src" "$src/arch" "$src/server" "$src/include" -name '*.h' -exec basename {} \; | sort -u); do
    n_headers=$((n_headers + 1))
    printf '#include <%s>\n' "$h" >"$probe/sys.c"
    if "$cc" -fsyntax-only -D_GNU_SOURCE "$probe/sys.c" 2>/dev/null; then
        echo "FAIL  $h is also a system header: rename the project's"
        fail=1
    fi
done
echo "layers: $n_headers header names checked against the system's"
[ "$n_headers" -ge 50 ] || {
    echo "FAIL  expected at least 50 project headers, found $n_headers"
    fail=1
}
[ $fail -eq 0 ] && echo "layers: PASS"
exit $fail
