#include "launcher/cli/raw_settings.h"

namespace muster::cli {

std::string_view ValueSourceName(ValueSource source) {
  switch (source) {
    case ValueSource::kCommandLine:
      return "flag";
    case ValueSource::kEnv:
      return "env";
    case ValueSource::kConfigFile:
      return "file";
    case ValueSource::kSlurm:
      return "SLURM";
  }
  return "?";
}

RawSettings::RawSettings() : slots_(Flags().size()) {}

void RawSettings::Set(const FlagSpec& flag, RawValue value) {
  auto& slot = slots_[FlagIndex(flag)];
  if (flag.name == "inject" && slot && slot->source == value.source) {
    // Faults add up: every --inject of one source is part of the plan.
    slot->text += ";" + value.text;
    return;
  }
  slot = std::move(value);
}

const RawValue* RawSettings::Get(const FlagSpec& flag) const {
  const auto& slot = slots_[FlagIndex(flag)];
  return slot ? &*slot : nullptr;
}

void RawSettings::Clear(const FlagSpec& flag) { slots_[FlagIndex(flag)].reset(); }

void RawSettings::OverlayWith(const RawSettings& higher) {
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    if (higher.slots_[i]) slots_[i] = higher.slots_[i];
  }
}

}  // namespace muster::cli
