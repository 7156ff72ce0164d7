// The root-cause error file written to the launcher's TORCHELASTIC_ERROR_FILE,
// byte for byte as torch's ErrorHandler.dump_error_file writes it.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "launcher/report/root_cause_file.h"
#include "tests/unit/temp_files.h"

using namespace muster;
using muster::testing::ReadFile;
using muster::testing::TempDir;

namespace {

// What @record in a worker writes (json.dump, Python's separators).
const char* const kRecorded =
    R"({"message": {"message": "ValueError: bad batch", "extraInfo": {"py_callstack": )"
    R"("Traceback (most recent call last):\n  ...\nValueError: bad batch\n", )"
    R"("timestamp": "1700000000"}}})";

}  // namespace

TEST_CASE("the worker's error gets its exit code as message.errorCode", "[root-cause]") {
  auto json = RootCauseErrorJson(kRecorded, 1);
  REQUIRE(json.ok());
  CHECK(*json ==
        R"({"message": {"message": "ValueError: bad batch", "extraInfo": {"py_callstack": )"
        R"("Traceback (most recent call last):\n  ...\nValueError: bad batch\n", )"
        R"("timestamp": "1700000000"}, "errorCode": 1}})");
}

TEST_CASE("a code already in the file is replaced in place", "[root-cause]") {
  auto json =
      RootCauseErrorJson(R"({"message":{"errorCode":1,"message":"x"},"z":[1,2.5,null]})", -9);
  REQUIRE(json.ok());
  CHECK(*json == R"({"message": {"errorCode": -9, "message": "x"}, "z": [1, 2.5, null]})");
}

TEST_CASE("a string message, no message, or code 0 is copied unchanged, as torch", "[root-cause]") {
  CHECK(*RootCauseErrorJson(R"({"message": "Signal 9", "timestamp": "1"})", 137) ==
        R"({"message": "Signal 9", "timestamp": "1"})");
  CHECK(*RootCauseErrorJson(R"({"error": "x"})", 1) == R"({"error": "x"})");
  CHECK(*RootCauseErrorJson(R"({"message": {"message": "x"}})", 0) ==
        R"({"message": {"message": "x"}})");
}

TEST_CASE("non-ASCII text is escaped as Python's json.dumps does", "[root-cause]") {
  CHECK(*RootCauseErrorJson("{\"message\": \"caf\xc3\xa9 \xf0\x9f\x94\xa5 \x7f\"}", 0) ==
        R"({"message": "caf\u00e9 \ud83d\udd25 \u007f"})");
}

TEST_CASE("a file that is not JSON is reported, not copied", "[root-cause]") {
  CHECK(RootCauseErrorJson("{\"message\": ", 1).status().IsInvalidArgument());
}

TEST_CASE("torch's exit code of a signalled worker is minus the signal", "[root-cause]") {
  CHECK(TorchExitCode(ExitStatus::Exited(3)) == 3);
  CHECK(TorchExitCode(ExitStatus::Killed(9)) == -9);
}

TEST_CASE("the root cause replaces the destination and leaves the worker's file", "[root-cause]") {
  TempDir dir("root_cause_test");
  WorkerFailure failure;
  failure.local_rank = 1;
  failure.status = ExitStatus::Killed(11);
  failure.error_file = dir.path + "/worker.json";
  std::ofstream(failure.error_file) << R"({"message": {"message": "boom"}})";
  const std::string destination = dir.path + "/root.json";
  std::ofstream(destination) << "stale and longer than what replaces it";
  REQUIRE(WriteRootCauseErrorFile(destination, failure).ok());
  CHECK(ReadFile(destination) == R"({"message": {"message": "boom", "errorCode": -11}})");
  CHECK(ReadFile(failure.error_file) == R"({"message": {"message": "boom"}})");
}

TEST_CASE("a worker without an error file leaves the destination unwritten", "[root-cause]") {
  TempDir dir("root_cause_test");
  WorkerFailure failure;
  failure.error_file = dir.path + "/none.json";
  const std::string destination = dir.path + "/root.json";
  CHECK(WriteRootCauseErrorFile(destination, failure).IsNotFound());
  CHECK_FALSE(std::filesystem::exists(destination));
}
