// Helpers for the muster_cli tests: LaunchOptions rendered as a flat
// field -> text map (so test tables list only the fields they care about),
// an in-memory environment (EnvOf, shared with the launcher tests), and
// temporary config files.
#pragma once

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "launcher/cli/command_line.h"
#include "tests/unit/launcher_test_support.h"

namespace muster::cli::testing {

inline std::string Join(const std::vector<std::string>& items, const char* sep = ",") {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : sep) + item;
  return out;
}

inline std::string Text(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

inline std::string Text(bool value) { return value ? "true" : "false"; }

// "3" for a mask on every rank; "0;0:1,1:2" when per-rank masks are given.
inline std::string Text(const StdSpec& spec) {
  std::string out = std::to_string(spec.all);
  if (spec.per_rank.empty()) return out;
  std::vector<std::string> items;
  for (const auto& [rank, mask] : spec.per_rank) {
    items.push_back(std::to_string(rank) + ":" + std::to_string(mask));
  }
  return out + ";" + Join(items);
}

inline std::map<std::string, std::string> Fields(const LaunchOptions& o, const ExtraOptions& x) {
  std::map<std::string, std::string> f;
  f["min_nodes"] = std::to_string(o.min_nodes);
  f["max_nodes"] = std::to_string(o.max_nodes);
  switch (o.nproc_per_node.kind) {
    case ProcsPerNode::Kind::kCount:
      f["nproc_per_node"] = std::to_string(o.nproc_per_node.count);
      break;
    case ProcsPerNode::Kind::kGpu:
      f["nproc_per_node"] = "gpu";
      break;
    case ProcsPerNode::Kind::kCpu:
      f["nproc_per_node"] = "cpu";
      break;
    case ProcsPerNode::Kind::kAuto:
      f["nproc_per_node"] = "auto";
      break;
  }
  f["rdzv_backend"] = o.rdzv_backend;
  f["rdzv_endpoint"] = o.rdzv_endpoint;
  f["rdzv_id"] = o.rdzv_id;
  std::vector<std::string> conf;
  for (const auto& [k, v] : o.rdzv_conf) conf.push_back(k + "=" + v);
  f["rdzv_conf"] = Join(conf);
  f["standalone"] = Text(o.standalone);
  f["node_rank"] = std::to_string(o.node_rank);
  f["master_addr"] = o.master_addr;
  f["master_port"] = o.master_port ? std::to_string(*o.master_port) : "unset";
  f["local_addr"] = o.local_addr;
  f["store_allow"] = Join(o.store_allow);
  f["store_max_keys"] = o.store_max_keys ? std::to_string(*o.store_max_keys) : "unset";
  f["store_max_bytes"] = o.store_max_bytes ? std::to_string(*o.store_max_bytes) : "unset";
  f["store_max_connections"] =
      o.store_max_connections ? std::to_string(*o.store_max_connections) : "unset";
  f["max_restarts"] = std::to_string(o.max_restarts);
  f["monitor_interval_s"] = Text(o.monitor_interval_s);
  f["start_method"] = o.start_method;
  f["role"] = o.role;
  f["run_as_module"] = Text(o.run_as_module);
  f["no_python"] = Text(o.no_python);
  f["run_path"] = Text(o.run_path);
  f["python"] = o.python;
  f["no_warm_workers"] = Text(o.no_warm_workers);
  f["warm_imports"] = Join(o.warm_imports, ",");
  f["log_dir"] = o.log_dir;
  f["redirects"] = Text(o.redirects);
  f["tee"] = Text(o.tee);
  std::vector<std::string> ranks;
  if (o.local_ranks_filter) {
    for (int r : *o.local_ranks_filter) ranks.push_back(std::to_string(r));
  }
  f["local_ranks_filter"] = o.local_ranks_filter ? Join(ranks) : "unset";
  f["prefix_output"] = Text(o.prefix_output);
  f["gpus"] = o.gpus ? Join(*o.gpus) : "unset";
  f["gpu_visibility"] = o.gpu_visibility == GpuVisibility::kAll ? "all" : "isolate";
  f["virtual_local_rank"] = Text(o.virtual_local_rank);
  f["duplicate_stdout_filters"] = Join(o.duplicate_stdout_filters, "|");
  f["duplicate_stderr_filters"] = Join(o.duplicate_stderr_filters, "|");
  f["local_rank_flag"] = o.local_rank_flag;
  f["shutdown_timeout_s"] = Text(o.shutdown_timeout_s);
  f["hang_timeout_s"] = Text(o.hang_timeout_s);
  f["recover_in_place"] = Text(o.recovery != LaunchOptions::Recovery::kRestart);
  f["recovery"] = o.recovery == LaunchOptions::Recovery::kAuto      ? "auto"
                  : o.recovery == LaunchOptions::Recovery::kInPlace ? "in-place"
                                                                    : "restart";
  f["recovery_timeout_s"] = Text(o.recovery_timeout_s);
  f["inject_seed"] = std::to_string(o.inject_seed);
  f["fault_plan"] = o.fault_plan ? o.fault_plan->text : "unset";
  f["config_file"] = o.config_file;
  f["health_port"] = o.health_port ? std::to_string(*o.health_port) : "unset";
  f["health_port_origin"] = o.health_port_origin;
  f["script"] = o.script;
  f["script_args"] = Join(o.script_args, " ");
  f["event_log_handler"] = x.event_log_handler;
  f["numa_binding"] = x.numa_binding;
  f["signals_to_handle"] = Join(x.signals_to_handle);
  f["slurm"] = x.slurm;
  f["dry_run"] = Text(x.dry_run);
  f["logs_specs"] = x.logs_specs;
  f["use_env"] = Text(x.use_env);
  f["local_rank_arg"] = x.local_rank_arg;
  return f;
}

using EnvMap = std::map<std::string, std::string>;
using muster::testing::EnvOf;  // an in-memory environment (launcher_test_support.h)

// A file with `contents` in a fresh temporary directory, removed on scope exit.
class TempFile {
 public:
  explicit TempFile(const std::string& contents, const std::string& name = "job.json") {
    static int counter = 0;
    dir_ = std::filesystem::temp_directory_path() /
           ("muster_cli_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / name).string();
    std::ofstream(path_) << contents;
  }
  ~TempFile() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::filesystem::path dir_;
  std::string path_;
};

}  // namespace muster::cli::testing
