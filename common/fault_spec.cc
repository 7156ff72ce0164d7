#include "common/fault_spec.h"

#include <array>
#include <charconv>
#include <cmath>
#include <csignal>

#include "common/decimal.h"
#include "common/quote.h"
#include "common/signal_names.h"
#include "common/splitmix64.h"
#include "common/trim.h"

namespace muster {
namespace {

using std::chrono::milliseconds;

struct KindInfo {
  FaultKind kind;
  std::string_view name;
  FaultActor actor;
};

constexpr std::array<KindInfo, 9> kKinds = {{
    {FaultKind::kKillWorker, "kill-worker", FaultActor::kAgent},
    {FaultKind::kHangWorker, "hang-worker", FaultActor::kAgent},
    {FaultKind::kExitWorker, "exit-worker", FaultActor::kWorker},
    {FaultKind::kKillAgent, "kill-agent", FaultActor::kAgent},
    {FaultKind::kDropHeartbeats, "drop-heartbeats", FaultActor::kAgent},
    {FaultKind::kDelayHeartbeats, "delay-heartbeats", FaultActor::kAgent},
    {FaultKind::kCrashDaemon, "crash-daemon", FaultActor::kDaemon},
    {FaultKind::kCorruptCheckpoint, "corrupt-checkpoint", FaultActor::kWorker},
    {FaultKind::kSlowWorker, "slow", FaultActor::kAgent},
}};

std::string KnownKinds() {
  std::string list;
  for (const auto& k : kKinds) list += (list.empty() ? "" : ", ") + std::string(k.name);
  return list;
}

// "250ms", "5s", "1.5m", "2" (seconds); nullopt when malformed, negative or
// beyond a day.
std::optional<milliseconds> ParseDuration(std::string_view text) {
  double scale = 1000;
  if (text.ends_with("ms")) {
    scale = 1;
    text.remove_suffix(2);
  } else if (text.ends_with('s')) {
    text.remove_suffix(1);
  } else if (text.ends_with('m')) {
    scale = 60'000;
    text.remove_suffix(1);
  }
  if (text.empty() || text.front() == '-' || text.front() == '+') return std::nullopt;
  double value = 0;
  const auto [end, error] =
      std::from_chars(text.data(), text.data() + text.size(), value, std::chars_format::fixed);
  if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
    return std::nullopt;
  }
  const double ms = value * scale;
  if (ms > 86'400'000.0) return std::nullopt;
  return milliseconds(static_cast<int64_t>(std::llround(ms)));
}

// "LOW..HIGH" or one value, each parsed by `parse`; the low end first.
template <typename T, typename Parse>
std::optional<std::pair<T, T>> ParseRange(std::string_view text, Parse parse) {
  const auto dots = text.find("..");
  const auto low = parse(text.substr(0, dots));
  if (!low) return std::nullopt;
  if (dots == std::string_view::npos) return std::pair<T, T>{*low, *low};
  const auto high = parse(text.substr(dots + 2));
  if (!high || *high < *low) return std::nullopt;
  return std::pair<T, T>{*low, *high};
}

uint64_t Draw(uint64_t seed, int index, uint64_t salt) {
  return SplitMix64(SplitMix64(seed ^ (static_cast<uint64_t>(index) << 8) ^ salt));
}

// A value of [low, high], drawn.
uint64_t Pick(uint64_t low, uint64_t high, uint64_t draw) {
  const uint64_t span = high - low;
  return span == UINT64_MAX ? draw : low + draw % (span + 1);
}

// Parses one spec; `at` is its index in the plan.
Result<FaultSpec> ParseSpec(std::string_view text, int at, uint64_t seed) {
  FaultSpec spec;
  spec.index = at;
  spec.text = std::string(text);
  auto bad = [&](const std::string& why) -> Result<FaultSpec> {
    return Status::InvalidArgument(Quote(spec.text) + ": " + why);
  };

  std::vector<std::string_view> parts;
  for (std::string_view rest = text;;) {
    const auto comma = rest.find(',');
    parts.push_back(Trim(rest.substr(0, comma)));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }

  const std::string_view head = parts.front();
  const auto colon = head.find(':');
  const std::string_view kind_name = head.substr(0, colon);
  const std::optional<std::string_view> arg =
      colon == std::string_view::npos ? std::nullopt : std::optional(head.substr(colon + 1));
  const KindInfo* info = nullptr;
  for (const auto& k : kKinds) {
    if (k.name == kind_name) info = &k;
  }
  if (info == nullptr) {
    return bad("unknown fault kind " + Quote(kind_name) + " (known: " + KnownKinds() + ")");
  }
  spec.kind = info->kind;

  switch (spec.kind) {
    case FaultKind::kKillWorker:
    case FaultKind::kKillAgent: {
      spec.signal = SIGKILL;
      if (!arg) break;
      const auto sig = ParseSignal(*arg);
      if (!sig) return bad(Quote(*arg) + " is not a signal (e.g. SIGKILL, TERM, 9)");
      spec.signal = *sig;
      break;
    }
    case FaultKind::kExitWorker: {
      if (!arg) break;
      const auto code = ParseDecimal(*arg, 255);
      if (!code) return bad("exit code " + Quote(*arg) + " is not a number in 0..255");
      spec.exit_code = static_cast<int>(*code);
      break;
    }
    case FaultKind::kDropHeartbeats:
    case FaultKind::kDelayHeartbeats: {
      if (!arg) {
        return bad(std::string(info->name) + " needs a duration, e.g. " + std::string(info->name) +
                   ":5s");
      }
      const auto d = ParseDuration(*arg);
      if (!d || d->count() == 0) {
        return bad(Quote(*arg) + " is not a positive duration (e.g. 500ms, 5s)");
      }
      spec.duration = *d;
      break;
    }
    default:
      if (arg) return bad(std::string(info->name) + " takes no argument after ':'");
  }

  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string_view part = parts[i];
    if (part.empty()) return bad("an empty item: a stray ','");
    const auto eq = part.find('=');
    if (eq == std::string_view::npos) {
      return bad(Quote(part) +
                 " is not key=value (keys: after, step, rank, node, "
                 "for, factor)");
    }
    const std::string_view key = part.substr(0, eq);
    const std::string_view value = part.substr(eq + 1);
    const std::string quoted = Quote(value);
    auto seen_twice = [&](bool seen) {
      return seen ? Status::InvalidArgument(Quote(spec.text) + ": " + std::string(key) +
                                            " given twice")
                  : Status::Ok();
    };
    if (key == "after") {
      if (auto s = seen_twice(spec.after.has_value()); !s.ok()) return s;
      const auto range = ParseRange<milliseconds>(value, ParseDuration);
      if (!range) return bad("after=" + quoted + " is not a duration or LOW..HIGH range");
      spec.after = milliseconds(static_cast<int64_t>(
          Pick(static_cast<uint64_t>(range->first.count()),
               static_cast<uint64_t>(range->second.count()), Draw(seed, at, 1))));
    } else if (key == "step") {
      if (auto s = seen_twice(spec.step.has_value()); !s.ok()) return s;
      const auto range =
          ParseRange<uint64_t>(value, [](std::string_view v) { return ParseDecimal(v); });
      if (!range || range->first == 0) {
        return bad("step=" + quoted + " is not a step >= 1 or LOW..HIGH range");
      }
      spec.step = Pick(range->first, range->second, Draw(seed, at, 2));
    } else if (key == "rank" || key == "node") {
      const bool is_rank = key == "rank";
      if (auto s =
              seen_twice(is_rank ? (spec.rank || spec.any_rank) : (spec.node || spec.any_node));
          !s.ok()) {
        return s;
      }
      if (value == "any") {
        (is_rank ? spec.any_rank : spec.any_node) = true;
      } else {
        const auto n = ParseDecimal(value, 1 << 30);
        if (!n) return bad(std::string(key) + "=" + quoted + " is not a number or 'any'");
        (is_rank ? spec.rank : spec.node) = static_cast<int>(*n);
      }
    } else if (key == "for") {
      if (auto s = seen_twice(spec.window.count() != 0); !s.ok()) return s;
      const auto d = ParseDuration(value);
      if (!d || d->count() == 0) return bad("for=" + quoted + " is not a positive duration");
      spec.window = *d;
    } else if (key == "factor") {
      if (auto s = seen_twice(spec.factor != 0); !s.ok()) return s;
      double factor = 0;
      const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), factor,
                                                std::chars_format::fixed);
      if (value.empty() || error != std::errc() || end != value.data() + value.size() ||
          !(factor > 1) || factor > 100) {
        return bad("factor=" + quoted + " is not a number above 1 and at most 100");
      }
      spec.factor = factor;
    } else {
      return bad("unknown key " + Quote(key) + " (keys: after, step, rank, node, for, factor)");
    }
  }
  spec.draw = Draw(seed, at, 3);

  const std::string name(info->name);
  // A slow rank is slow from the start unless told otherwise.
  if (spec.kind == FaultKind::kSlowWorker && !spec.after && !spec.step) {
    spec.after = milliseconds(0);
  }
  if (spec.after.has_value() == spec.step.has_value()) {
    return bad(name + " needs one trigger: after=DURATION or step=N");
  }
  const bool has_rank = spec.rank || spec.any_rank;
  const bool has_node = spec.node || spec.any_node;
  switch (spec.kind) {
    case FaultKind::kKillWorker:
    case FaultKind::kHangWorker:
    case FaultKind::kExitWorker:
    case FaultKind::kSlowWorker:
      if (!has_rank) return bad(name + " needs a target: rank=N or rank=any");
      if (has_node) return bad(name + " targets a rank, not a node");
      break;
    case FaultKind::kKillAgent:
    case FaultKind::kDropHeartbeats:
    case FaultKind::kDelayHeartbeats:
      if (has_rank) return bad(name + " targets a node (node=N), not a rank");
      break;
    case FaultKind::kCrashDaemon:
    case FaultKind::kCorruptCheckpoint:
      if (has_rank || has_node) return bad(name + " takes no rank= or node=");
      break;
  }
  if (spec.kind == FaultKind::kExitWorker && !spec.step) {
    return bad("exit-worker fires inside the worker, at a step: use step=N");
  }
  if (spec.kind == FaultKind::kCorruptCheckpoint && !spec.step) {
    return bad("corrupt-checkpoint fires at a checkpoint's step: use step=N");
  }
  if (spec.kind == FaultKind::kCrashDaemon && !spec.after) {
    return bad("crash-daemon fires on the daemon's clock (it sees no steps): use after=DURATION");
  }
  if (spec.kind == FaultKind::kDelayHeartbeats && spec.window.count() == 0) {
    return bad("delay-heartbeats needs for=DURATION: how long heartbeats are late");
  }
  if (spec.kind != FaultKind::kDelayHeartbeats && spec.window.count() != 0) {
    return bad("for= applies to delay-heartbeats only");
  }
  if (spec.kind == FaultKind::kSlowWorker && spec.factor == 0) {
    return bad("slow needs factor=F: how many times slower the rank runs (e.g. factor=2)");
  }
  if (spec.kind != FaultKind::kSlowWorker && spec.factor != 0) {
    return bad("factor= applies to slow only");
  }
  return spec;
}

}  // namespace

FaultActor FaultActorOf(FaultKind kind) {
  for (const auto& k : kKinds) {
    if (k.kind == kind) return k.actor;
  }
  return FaultActor::kAgent;
}

std::string_view FaultKindName(FaultKind kind) {
  for (const auto& k : kKinds) {
    if (k.kind == kind) return k.name;
  }
  return "?";
}

int FaultSpec::RankAmong(int count) const {
  return any_rank ? static_cast<int>(draw % static_cast<uint64_t>(count)) : rank.value_or(-1);
}

int FaultSpec::NodeAmong(int count) const {
  return any_node ? static_cast<int>(draw % static_cast<uint64_t>(count)) : node.value_or(-1);
}

std::optional<int> ParseSignal(std::string_view text) {
  if (const auto n = ParseDecimal(text, NSIG - 1); n && *n > 0) return static_cast<int>(*n);
  std::string name(text);
  if (!name.starts_with("SIG")) name = "SIG" + name;
  if (const int sig = SignalNumber(name); sig != 0) return sig;
  return std::nullopt;
}

Result<FaultPlan> ParseFaultPlan(std::string_view text, uint64_t seed) {
  FaultPlan plan;
  plan.seed = seed;
  for (std::string_view rest = text;;) {
    const auto semicolon = rest.find(';');
    const std::string_view piece = Trim(rest.substr(0, semicolon));
    if (!piece.empty()) {
      auto spec = ParseSpec(piece, static_cast<int>(plan.faults.size()), seed);
      if (!spec.ok()) return spec.status();
      plan.text += (plan.text.empty() ? "" : ";") + spec->text;
      plan.faults.push_back(std::move(spec).value());
    }
    if (semicolon == std::string_view::npos) break;
    rest.remove_prefix(semicolon + 1);
  }
  if (plan.faults.empty()) {
    return Status::InvalidArgument(Quote(text) +
                                   ": no fault given (e.g. "
                                   "kill-worker,rank=0,step=10)");
  }
  return plan;
}

Result<std::optional<FaultPlan>> ResolveFaultPlan(std::string_view text, std::string_view origin,
                                                  std::optional<uint64_t> seed,
                                                  const EnvLookup& env) {
  // An empty lookup is an empty environment.
  auto variable = [&env](const char* name) { return env ? env(name).value_or("") : ""; };
  std::string from_env;
  if (text.empty()) {
    from_env = variable(kInjectEnv);
    text = from_env;
    origin = kInjectEnv;
  }
  if (text.empty()) return std::optional<FaultPlan>();
  if (!seed) {
    const std::string seed_text = variable(kInjectSeedEnv);
    seed = seed_text.empty() ? 0 : ParseDecimal(seed_text);
    if (!seed) {
      return Status::InvalidArgument(std::string(kInjectSeedEnv) + ": " + Quote(seed_text) +
                                     " must be a non-negative integer");
    }
  }
  auto plan = ParseFaultPlan(text, *seed);
  if (!plan.ok()) {
    return Status::InvalidArgument(std::string(origin) + ": " + plan.status().message());
  }
  return std::optional<FaultPlan>(std::move(plan).value());
}

}  // namespace muster
