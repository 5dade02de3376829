# The scale-out recipe (docs/deploy.md): three oxillama serve replicas behind HAProxy with
# docs/deploy/haproxy.cfg, a load through the OpenAI Node client, one replica stopped with SIGTERM
# mid-run and restarted; no failed request, >= 90 % affinity (tests/deploy/run.sh; skipped
# without haproxy or node).
add_test(NAME deploy COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/deploy/run.sh ${OXL_BIN} ${M}/stories260K.gguf ${G}/run)
set_tests_properties(deploy PROPERTIES TIMEOUT 180 SKIP_RETURN_CODE 77)
