# Unit tests of the rendezvous wire codec (rendezvous/protocol): framing and
# the JSON form of every message. No sockets.
muster_unit_test(rdzv_protocol_unit_tests
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/rdzv_protocol_frame_codec_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/rdzv_protocol_message_codec_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/rdzv_protocol_message_reject_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/rdzv_protocol_error_code_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/rdzv_protocol_heartbeat_fast_path_test.cc
  LIBS muster_rdzv_protocol)
