#include "rendezvous/replica/run_record_json.h"

#include <limits>

#include <nlohmann/json.hpp>

#include "common/quote.h"

namespace muster::rdzv::replica {
namespace {

using nlohmann::json;

Status Bad(std::string_view text, const std::string& why) {
  return Status::InvalidArgument("run record " + Quote(text) + ": " + why);
}

}  // namespace

std::string EncodeRunRecord(const RunRecord& r) {
  return json{{"run_id", r.run_id},
              {"generation", r.generation},
              {"restart_count", r.restart_count},
              {"max_restarts", r.max_restarts},
              {"min_nodes", r.min_nodes},
              {"max_nodes", r.max_nodes},
              {"ended", r.ended}}
      .dump();
}

Result<RunRecord> DecodeRunRecord(std::string_view text) {
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return Bad(text, "not a JSON object");
  RunRecord r;
  const auto text_field = [&](const char* name, std::string& out) -> Status {
    if (!doc.contains(name) || !doc.at(name).is_string()) {
      return Bad(text, std::string(name) + " is not a string");
    }
    out = doc.at(name).get<std::string>();
    return Status::Ok();
  };
  const auto count_field = [&](const char* name, auto& out) -> Status {
    using T = std::decay_t<decltype(out)>;
    if (!doc.contains(name) || !doc.at(name).is_number_unsigned() ||
        doc.at(name).get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<T>::max())) {
      return Bad(text, std::string(name) + " is not a count");
    }
    out = static_cast<T>(doc.at(name).get<uint64_t>());
    return Status::Ok();
  };
  for (Status s :
       {text_field("run_id", r.run_id), count_field("generation", r.generation),
        count_field("restart_count", r.restart_count), count_field("max_restarts", r.max_restarts),
        count_field("min_nodes", r.min_nodes), count_field("max_nodes", r.max_nodes)}) {
    if (!s.ok()) return s;
  }
  if (!doc.contains("ended") || !doc.at("ended").is_boolean()) {
    return Bad(text, "ended is not true or false");
  }
  r.ended = doc.at("ended").get<bool>();
  return r;
}

}  // namespace muster::rdzv::replica
