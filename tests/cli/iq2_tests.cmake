# oxillama quantize for the 2-bit I-quant ftypes: with llama-quantize's flags and paths (the imatrix
# path is in the file's metadata), the whole file models/synth-small-IQ2_XXS.gguf that llama-quantize
# wrote (golden/README.md) byte for byte; without
# an importance matrix, the refusal llama.cpp gives (exit status 1 and its reason).
add_test(NAME quantize-iq2-xxs-file
         COMMAND sh -c "out=$1/synth-small-IQ2_XXS.gguf && mkdir -p $1 && cd $2 && \
                        $0 quantize --imatrix golden/quantize/synth-small.imatrix.gguf --tensor-type attn_v=iq2_xxs \
                           golden/quantize/synth-small-f32.gguf $out IQ2_XXS >/dev/null 2>&1 && \
                        cmp $out models/synth-small-IQ2_XXS.gguf"
                 ${OXL_BIN} ${CMAKE_CURRENT_BINARY_DIR}/quantize-iq2 ${PROJECT_SOURCE_DIR})
add_test(NAME quantize-iq2-needs-imatrix
         COMMAND sh -c "for ft in IQ2_XXS IQ2_XS; do \
                          msg=$($0 quantize $1/quantize/synth-small-f32.gguf $2/no-imatrix.gguf $ft 2>&1); rc=$?; \
                          [ $rc -eq 1 ] || { echo \"$ft: exit status $rc\"; exit 1; }; \
                          case $msg in *'this quantization requires an importance matrix'*) ;; \
                          *) echo \"$ft: $msg\"; exit 1 ;; esac; \
                          [ ! -e $2/no-imatrix.gguf ] || { echo \"$ft: wrote a file\"; exit 1; }; \
                        done"
                 ${OXL_BIN} ${G} ${CMAKE_CURRENT_BINARY_DIR})
