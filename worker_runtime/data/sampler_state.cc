#include "worker_runtime/data/sampler_state.h"

#include <nlohmann/json.hpp>

namespace muster::runtime {
namespace {

Result<uint64_t> ReadUnsignedField(const nlohmann::json& object, const char* name) {
  const auto it = object.find(name);
  if (it == object.end()) {
    return Status::InvalidArgument(std::string("sampler state: field '") + name + "' is missing");
  }
  if (!it->is_number_unsigned()) {
    return Status::InvalidArgument(std::string("sampler state: field '") + name +
                                   "'=" + it->dump() + " is not a non-negative integer");
  }
  return it->get<uint64_t>();
}

}  // namespace

std::string SamplerState::ToJson() const {
  return nlohmann::json{{"epoch", epoch}, {"global_position", global_position}}.dump();
}

Result<SamplerState> SamplerState::FromJson(std::string_view json) {
  const nlohmann::json parsed = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) {
    return Status::InvalidArgument("sampler state: '" + std::string(json) +
                                   "' is not a JSON object");
  }
  Result<uint64_t> epoch = ReadUnsignedField(parsed, "epoch");
  if (!epoch.ok()) return epoch.status();
  Result<uint64_t> position = ReadUnsignedField(parsed, "global_position");
  if (!position.ok()) return position.status();
  return SamplerState{*epoch, *position};
}

}  // namespace muster::runtime
