#include <catch2/catch.hpp>
#include <csignal>
#include <fstream>

#include "launcher/failure_report.h"

using namespace muster;

TEST_CASE("the report names the root cause first with rank, host, pid, exit and time", "[report]") {
  WorkerFailure first{1,
                      5,
                      4242,
                      ExitStatus::Killed(SIGSEGV),
                      WallTime(std::chrono::milliseconds(1'700'000'000'123)),
                      ""};
  WorkerFailure second{
      0, 4, 4241, ExitStatus::Exited(3), WallTime(std::chrono::milliseconds(1'700'000'001'000)),
      ""};
  const std::string report = FormatFailureReport({first, second}, {"node7", 0, 0, false});
  CHECK(report.find("root cause") < report.find("other failures"));
  CHECK(report.find("rank       : 5 (local_rank 1)") < report.find("rank       : 4"));
  CHECK(report.find("host       : node7") != std::string::npos);
  CHECK(report.find("pid        : 4242") != std::string::npos);
  CHECK(report.find("signal 11 (SIGSEGV)") != std::string::npos);
  CHECK(report.find("exit code 3") != std::string::npos);
  CHECK(report.find("2023-11-14T22:13:20.123Z") != std::string::npos);
  CHECK(report.find("no restarts left") != std::string::npos);
}

TEST_CASE("torch's error file message is quoted in the report", "[report]") {
  const std::string path = "/tmp/muster_report_test_error.json";
  {
    std::ofstream out(path);
    out << R"({"message": {"message": "RuntimeError: boom\nline two", "extraInfo": {}}})";
  }
  CHECK(ReadErrorFileMessage(path) == "RuntimeError: boom\nline two");
  WorkerFailure f{0, 0, 1, ExitStatus::Exited(1), WallTime{}, path};
  const std::string report = FormatFailureReport({f}, {"h", 1, 3, true});
  CHECK(report.find("message    : RuntimeError: boom") != std::string::npos);
  CHECK(report.find("restarting all local workers") != std::string::npos);
  std::remove(path.c_str());
}

TEST_CASE("a missing or corrupt error file is ignored", "[report]") {
  CHECK(ReadErrorFileMessage("/nonexistent/error.json").empty());
  const std::string path = "/tmp/muster_report_test_corrupt.json";
  {
    std::ofstream out(path);
    out << "{not json";
  }
  CHECK(ReadErrorFileMessage(path).empty());
  std::remove(path.c_str());
}

TEST_CASE("exit statuses decode signals apart from exit codes", "[report]") {
  CHECK(ExitStatus::Exited(15).ShellCode() == 15);
  CHECK(ExitStatus::Killed(SIGTERM).ShellCode() == 128 + SIGTERM);
  CHECK(ExitStatus::Killed(SIGTERM).Describe() == "signal 15 (SIGTERM)");
  CHECK(SignalName(SIGKILL) == "SIGKILL");
  CHECK(SignalNumber("SIGUSR1") == SIGUSR1);
  CHECK(SignalNumber("SIGNOPE") == 0);
}

TEST_CASE("an in-place recovery's report says only the failed workers start again", "[report]") {
  WorkerFailure f{0, 0, 1, ExitStatus::Killed(9), WallTime{}, ""};
  const std::string report = FormatFailureReport({f}, {"h", 0, 3, true, true});
  CHECK_THAT(report, Catch::Contains("starting the failed workers again; the others recover in "
                                     "place"));
  CHECK_THAT(FormatFailureReport({f}, {"h", 3, 3, false, true}),
             Catch::Contains("no restarts left"));
}
