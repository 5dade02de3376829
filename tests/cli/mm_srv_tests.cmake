# Images in oxillama serve (--mmproj): the OpenAI Node client sends golden/mm/image.png to the
# LLaVA-1.5 pair of golden/mm and gets llama.cpp's greedy reply; cache reuse through the image,
# refused URLs and images, /props and /v1/models (tests/server/vision.sh).
add_test(NAME server-vision COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/server/vision.sh ${OXL_BIN} ${CMAKE_SOURCE_DIR})
set_tests_properties(server-vision PROPERTIES TIMEOUT 300)
