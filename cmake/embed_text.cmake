# Writes OUTPUT, a C++ source defining `extern const char NAME[]` with the
# text of INPUT, at build time (add_custom_command), so the file ships inside
# the binary that uses it:
#   cmake -DINPUT=in.py -DOUTPUT=out.cc -DNAME=kSymbol -P embed_text.cmake
file(READ "${INPUT}" text)
if(text MATCHES "\\)EMBEDDED\"")
  message(FATAL_ERROR "${INPUT} contains the raw-string delimiter )EMBEDDED\"")
endif()
file(WRITE "${OUTPUT}.tmp"
     "// Generated from ${INPUT} by cmake/embed_text.cmake; do not edit.\n"
     "extern const char ${NAME}[];\n"
     "const char ${NAME}[] = R\"EMBEDDED(${text})EMBEDDED\";\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
