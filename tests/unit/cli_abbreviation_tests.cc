// Abbreviated long flags, as torchrun's argparse takes them: an exact name
// wins, a unique prefix stands for its flag, an ambiguous one is refused
// naming each candidate flag once. PET_ variables and config keys are never
// abbreviations.
#include <catch2/catch.hpp>

#include "launcher/cli/flag_table.h"
#include "tests/unit/cli_test_support.h"

namespace muster::cli {
namespace {

using testing::EnvOf;
using testing::Fields;

std::map<std::string, std::string> FieldsOf(const std::vector<std::string>& args,
                                            CommandMode mode = CommandMode::kRun,
                                            const testing::EnvMap& env = {}) {
  INFO("args: " << testing::Join(args, " "));
  CliOutcome outcome = ParseLaunchCommandLine(args, EnvOf(env), mode);
  INFO("text: " << outcome.text);
  REQUIRE(outcome.options.has_value());
  return Fields(*outcome.options, outcome.extras);
}

std::string ErrorOf(const std::vector<std::string>& args, CommandMode mode = CommandMode::kRun,
                    const testing::EnvMap& env = {}) {
  CliOutcome outcome = ParseLaunchCommandLine(args, EnvOf(env), mode);
  REQUIRE_FALSE(outcome.options.has_value());
  CHECK(outcome.exit_code == 2);
  return outcome.text;
}

TEST_CASE("a prefix unique among torchrun's flags means torchrun's flag beside muster's own") {
  // --recovery, --recovery-timeout, --no-prefix, --hang-timeout, --version
  // are muster's: torchrun command lines do not know them.
  CHECK(FieldsOf({"--re", "3", "t.py"})["redirects"] == "3");
  CHECK(FieldsOf({"--no-pyt", "--no-p", "/bin/true"})["no_python"] == "true");
  CHECK(FieldsOf({"--v", "t.py"})["virtual_local_rank"] == "true");
  // Prefixes of muster's own flags only are taken among every flag.
  CHECK(ParseLaunchCommandLine({"--recovery-t", "5", "t.py"}, EnvOf({}), CommandMode::kRun)
            .given.Get(*FindFlag("recovery-timeout")) != nullptr);
}

TEST_CASE("a unique prefix of a long flag stands for it, in either spelling and with '='") {
  CHECK(FieldsOf({"--nproc_per_nod", "2", "t.py"})["nproc_per_node"] == "2");
  CHECK(FieldsOf({"--nproc", "2", "t.py"})["nproc_per_node"] == "2");
  CHECK(FieldsOf({"--nproc-per", "3", "t.py"})["nproc_per_node"] == "3");
  CHECK(FieldsOf({"--nproc=4", "t.py"})["nproc_per_node"] == "4");
  CHECK(FieldsOf({"--nn", "2", "--node_r=1", "t.py"})["node_rank"] == "1");
  CHECK(FieldsOf({"--max_rest", "3", "t.py"})["max_restarts"] == "3");
  CHECK(FieldsOf({"--rdzv-b", "c10d", "--nnodes", "1:2", "--rdzv-endp", "h:1",
                  "t.py"})["rdzv_endpoint"] == "h:1");
}

TEST_CASE("a prefix of a switch turns it on, and a prefix of --help asks for help") {
  CHECK(FieldsOf({"--stand", "t.py"})["standalone"] == "true");
  CHECK(FieldsOf({"--no-pr", "t.py"})["prefix_output"] == "false");
  CHECK(FieldsOf({"--no_py", "/bin/true"})["no_python"] == "true");
  CliOutcome help = ParseLaunchCommandLine({"--he"}, EnvOf({}));
  CHECK(help.exit_code == 0);
  CHECK(help.text.starts_with("usage: muster"));
}

TEST_CASE("an exact name wins over the longer flags it starts") {
  // --inject is also the start of --inject-seed; --recovery of --recovery-timeout.
  auto fields =
      FieldsOf({"--inject", "kill-worker,rank=0,step=3", "--recovery", "in-place", "t.py"});
  CHECK(fields["fault_plan"] == "kill-worker,rank=0,step=3");
  CHECK(fields["recover_in_place"] == "true");
  CHECK(FieldsOf({"--gpus", "0", "--nproc-per-node", "1", "t.py"})["gpus"] == "0");
}

TEST_CASE("an ambiguous prefix is refused naming each candidate flag once") {
  CHECK(ErrorOf({"--gpu", "0", "t.py"}) ==
        "muster: error: ambiguous flag '--gpu' could match --gpus, --gpu-visibility");
  CHECK(ErrorOf({"--rdzv", "x", "t.py"}) ==
        "muster: error: ambiguous flag '--rdzv' could match --rdzv-backend, --rdzv-endpoint, "
        "--rdzv-id, --rdzv-conf");
  // Candidates in the user's spelling, so one can be pasted back.
  CHECK(ErrorOf({"--rdzv_", "x", "t.py"}) ==
        "muster: error: ambiguous flag '--rdzv_' could match --rdzv_backend, --rdzv_endpoint, "
        "--rdzv_id, --rdzv_conf");
}

TEST_CASE("launch-only flags are candidates only for muster launch") {
  // Plain muster: --local-rank-arg is not a candidate, so --local_ra is
  // --local_ranks_filter; under muster launch it could be either.
  CHECK(FieldsOf({"--local_ra", "0", "t.py"})["local_ranks_filter"] == "0");
  CHECK(ErrorOf({"--local_ra", "0", "t.py"}, CommandMode::kLaunch) ==
        "muster: error: ambiguous flag '--local_ra' could match --local_ranks_filter, "
        "--local_rank_arg");
  CHECK(FieldsOf({"--use", "t.py"}, CommandMode::kLaunch)["use_env"] == "true");
  // The exact name still reaches the mode rule, which explains.
  CHECK(ErrorOf({"--use-env", "t.py"}).find("only `muster launch` takes it") != std::string::npos);
}

TEST_CASE("single-dash words and PET_ variables are never abbreviations") {
  CHECK(ErrorOf({"-nproc", "2", "t.py"}) == "muster: error: unknown flag '-nproc'");
  // PET_NPROC names no flag: it is left alone, as torchrun leaves it.
  CHECK(FieldsOf({"t.py"}, CommandMode::kRun, {{"PET_NPROC", "2"}})["nproc_per_node"] == "1");
}

}  // namespace
}  // namespace muster::cli
