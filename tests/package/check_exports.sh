#!/bin/sh
# ctest shlib-exports: liboxillama.so exports exactly the functions include/oxillama.h declares (the
# header run through the preprocessor, so comments do not count), all named oxl_*, and nothing else
# (nm -D --defined-only); its SONAME is liboxillama.so.SOVERSION.
# usage: check_exports.sh LIBRARY HEADER CC SOVERSION
set -u
lib=$1 header=$2 cc=$3 soversion=$4
status=0
exported=$(nm -D --defined-only "$lib" | awk '{print $NF}' | sort -u) || exit 1
declared=$($cc -E -P "$header" | grep -o '\boxl_[a-z0-9_]*(' | tr -d '(' | sort -u) || exit 1
n_exp=$(printf '%s\n' "$exported" | grep -c .)
n_decl=$(printf '%s\n' "$declared" | grep -c .)
other=$(printf '%s\n' "$exported" | grep -v '^oxl_')
if [ -n "$other" ]; then
    echo "FAIL  exported symbols not named oxl_*: $(printf '%s\n' "$other" | head -20 | tr '\n' ' ')"
    status=1
fi
extra=$(printf '%s\n' "$exported" | grep -vxF "$declared")
if [ -n "$extra" ]; then
    echo "FAIL  exported, not in $header: $(printf '%s\n' "$extra" | head -20 | tr '\n' ' ')"
    status=1
fi
missing=$(printf '%s\n' "$declared" | grep -vxF "$exported")
if [ -n "$missing" ]; then
    echo "FAIL  declared in $header, not exported: $(printf '%s\n' "$missing" | tr '\n' ' ')"
    status=1
fi
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
if [ "$soname" != "liboxillama.so.$soversion" ]; then
    echo "FAIL  SONAME '$soname', want 'liboxillama.so.$soversion'"
    status=1
fi
echo "shlib-exports: $n_exp symbols exported, $n_decl functions declared; SONAME $soname"
exit $status
