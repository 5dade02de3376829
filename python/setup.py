"""pip install --no-build-isolation ./python — builds oxillama._oxillama against the library of a
CMake build of this repository (no network: setuptools as installed).

The static library and its dependencies come from the build folder OXILLAMA_BUILD_DIR (default:
../build beside this folder), which must have been built first (cmake -S . -B build && ninja -C
build). The extension is linked against build/liboxillama.a plus the libraries it needs (cJSON,
PCRE2 32-bit, utf8proc, libm, pthreads)."""
import os

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BUILD = os.path.abspath(os.environ.get("OXILLAMA_BUILD_DIR", os.path.join(ROOT, "build")))
LIB = os.path.join(BUILD, "liboxillama.a")
if not os.path.exists(LIB):
    raise SystemExit("oxillama: %s is missing: build the library first (cmake -S %s -B %s && ninja -C %s), "
                     "or set OXILLAMA_BUILD_DIR" % (LIB, ROOT, BUILD, BUILD))

setup(
    name="oxillama",
    version="0.1.0",
    description="Python binding of oxillama, an LLM inference engine that reproduces llama.cpp's outputs",
    packages=["oxillama"],
    ext_modules=[
        Extension(
            "oxillama._oxillama",
            sources=["src/_oxillama.c"],
            include_dirs=[os.path.join(ROOT, "include")],
            extra_objects=[LIB],
            libraries=["cjson", "pcre2-32", "pcre2-8", "utf8proc", "m", "pthread"],
            extra_compile_args=["-std=c17"],
            extra_link_args=["-Wl,--exclude-libs,ALL"],  # export PyInit__oxillama alone
        )
    ],
    python_requires=">=3.8",
)
