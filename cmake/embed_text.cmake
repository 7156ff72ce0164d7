# Writes OUTPUT, a C++ source defining `extern const char NAME[]` with the
# text of INPUT, at build time (add_custom_command), so the file ships inside
# the binary that uses it:
#   cmake -DINPUT=in.py -DOUTPUT=out.cc -DNAME=kSymbol -P embed_text.cmake
# INPUT may name several files separated by "|": their texts are joined in
# that order, each ending with a newline.
string(REPLACE "|" ";" inputs "${INPUT}")
set(text "")
foreach(input IN LISTS inputs)
  file(READ "${input}" part)
  if(part MATCHES "\\)EMBEDDED\"")
    message(FATAL_ERROR "${input} contains the raw-string delimiter )EMBEDDED\"")
  endif()
  if(NOT part MATCHES "\n$")
    string(APPEND part "\n")
  endif()
  string(APPEND text "${part}")
endforeach()
file(WRITE "${OUTPUT}.tmp"
     "// Generated from ${INPUT} by cmake/embed_text.cmake; do not edit.\n"
     "extern const char ${NAME}[];\n"
     "const char ${NAME}[] = R\"EMBEDDED(${text})EMBEDDED\";\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
