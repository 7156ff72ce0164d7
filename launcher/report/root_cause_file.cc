#include "launcher/report/root_cause_file.h"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace muster {
namespace {

// Python's json.dumps with its defaults: ", " between items, ": " after keys,
// ASCII only. Schedulers compare these files byte for byte less often than
// they parse them, but the same bytes cost nothing.
void AppendPythonJson(const nlohmann::ordered_json& value, std::string& out) {
  using Value = nlohmann::ordered_json::value_t;
  constexpr auto kReplaceInvalid = nlohmann::ordered_json::error_handler_t::replace;
  switch (value.type()) {
    case Value::object: {
      out += '{';
      bool first = true;
      for (const auto& [key, item] : value.items()) {
        if (!first) out += ", ";
        first = false;
        out += nlohmann::ordered_json(key).dump(-1, ' ', true, kReplaceInvalid);
        out += ": ";
        AppendPythonJson(item, out);
      }
      out += '}';
      return;
    }
    case Value::array: {
      out += '[';
      bool first = true;
      for (const auto& item : value) {
        if (!first) out += ", ";
        first = false;
        AppendPythonJson(item, out);
      }
      out += ']';
      return;
    }
    default:
      out += value.dump(-1, ' ', true, kReplaceInvalid);
  }
}

}  // namespace

int TorchExitCode(const ExitStatus& status) {
  return status.signaled ? -status.signal : status.code;
}

Result<std::string> RootCauseErrorJson(std::string_view worker_file_text, int error_code) {
  nlohmann::ordered_json doc =
      nlohmann::ordered_json::parse(worker_file_text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Status::InvalidArgument("the worker's error file is not JSON");
  // torch overrides the code only in an object "message": the worker cannot
  // know it was killed by a signal, the launcher can.
  if (error_code != 0 && doc.is_object() && doc.contains("message") && doc["message"].is_object()) {
    doc["message"]["errorCode"] = error_code;
  }
  std::string out;
  AppendPythonJson(doc, out);
  return out;
}

Status WriteRootCauseErrorFile(const std::string& destination, const WorkerFailure& root_cause) {
  std::ifstream in(root_cause.error_file, std::ios::binary);
  if (root_cause.error_file.empty() || !in) {
    return Status::NotFound("local_rank " + std::to_string(root_cause.local_rank) +
                            " left no error file");
  }
  std::ostringstream text;
  text << in.rdbuf();
  auto document = RootCauseErrorJson(text.str(), TorchExitCode(root_cause.status));
  if (!document.ok()) {
    return Status::InvalidArgument("'" + root_cause.error_file +
                                   "': " + document.status().message());
  }
  // Replaced, not appended to: a file left there by an earlier run is stale.
  std::remove(destination.c_str());
  std::ofstream out(destination, std::ios::binary | std::ios::trunc);
  out << *document;
  out.close();
  if (!out) return Status::IoError("cannot write '" + destination + "'");
  return Status::Ok();
}

void CopyRootCauseErrorFile(const EnvLookup& launcher_env, const WorkerFailure& root_cause) {
  const std::optional<std::string> destination = launcher_env("TORCHELASTIC_ERROR_FILE");
  if (!destination || destination->empty()) return;
  const Status status = WriteRootCauseErrorFile(*destination, root_cause);
  if (status.ok()) {
    spdlog::info("root cause of rank {} written to TORCHELASTIC_ERROR_FILE={}",
                 root_cause.global_rank, *destination);
  } else if (status.IsNotFound()) {
    // torchrun's @record writes nothing either, and says how to get a file.
    spdlog::info(
        "{}; TORCHELASTIC_ERROR_FILE not written (decorate the script's entry point "
        "with torch.distributed.elastic.multiprocessing.errors.record)",
        status.message());
  } else {
    spdlog::warn("TORCHELASTIC_ERROR_FILE not written: {}", status.message());
  }
}

}  // namespace muster
