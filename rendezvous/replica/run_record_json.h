// A RunRecord (rendezvous/state/run_record.h) as the JSON value of its etcd
// key PREFIX/runs/RUN_ID:
//   {"run_id":"job","generation":4,"restart_count":1,"max_restarts":3,
//    "min_nodes":2,"max_nodes":3,"ended":false}
// Decoding refuses a value that is not such an object, naming the field;
// fields added later are ignored.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "rendezvous/state/run_record.h"

namespace muster::rdzv::replica {

std::string EncodeRunRecord(const RunRecord& record);
Result<RunRecord> DecodeRunRecord(std::string_view text);

}  // namespace muster::rdzv::replica
