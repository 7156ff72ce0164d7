#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>

#include "launcher/report/failure_report.h"

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

TEST_CASE("the report says how many restarts of the budget were used", "[report]") {
  WorkerFailure f{0, 0, 1, ExitStatus::Exited(1), WallTime{}, ""};
  CHECK_THAT(FormatFailureReport({f}, {"h", 1, 3, true}),
             Catch::StartsWith("muster: worker failure in attempt 1 (1 of 3 restarts used); "));
  CHECK_THAT(FormatFailureReport({f}, {"h", 0, 0, false}),
             Catch::Contains("(0 of 0 restarts used); no restarts left"));
}

TEST_CASE("files that outlive muster are named and a temporary error file is only quoted",
          "[report]") {
  // One directory per process: several build trees may run their tests at once.
  const std::string dir = "/tmp/muster_report_test_rank_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/error.json";
  {
    std::ofstream out(path);
    out << R"({"message": "ValueError: bad batch"})";
  }
  WorkerFailure f{0, 0, 1, ExitStatus::Exited(1), WallTime{}, path};
  ReportContext kept{"h", 0, 0, false};
  const std::string named = FormatFailureReport({f}, kept);
  CHECK_THAT(named, Catch::Contains("logs       : " + dir + "\n"));
  CHECK_THAT(named, Catch::Contains("error file : " + path + "\n"));
  CHECK_THAT(named, Catch::Contains("message    : ValueError: bad batch"));

  ReportContext temporary = kept;
  temporary.files_kept = false;
  const std::string quoted = FormatFailureReport({f}, temporary);
  CHECK(quoted.find(dir) == std::string::npos);
  CHECK_THAT(quoted, Catch::Contains("message    : ValueError: bad batch"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("a worker whose Python has no torch gets one hint naming the interpreter", "[report]") {
  WorkerFailure first{0, 0, 1, ExitStatus::Exited(1), WallTime{}, ""};
  WorkerFailure second{1, 1, 2, ExitStatus::Exited(1), WallTime{}, ""};
  ReportContext context{"h", 0, 0, false};
  context.interpreter = "python3 (/root/.pyenv/shims/python3)";
  const std::string traceback =
      "Traceback (most recent call last):\n  File \"t.py\", line 1, in <module>\n"
      "    import torch\nModuleNotFoundError: No module named 'torch'\n";
  context.stderr_tails = {{0, traceback}, {1, traceback}};
  const std::string report = FormatFailureReport({first, second}, context);
  const std::string hint =
      "  hint: the workers' Python has no torch; they ran python3 (/root/.pyenv/shims/python3). "
      "Choose the interpreter with --python PATH or MUSTER_PYTHON=PATH\n";
  REQUIRE(report.find(hint) != std::string::npos);
  CHECK(report.find(hint) == report.rfind(hint));

  context.stderr_tails = {{0, "ModuleNotFoundError: No module named 'torchvision'\n"}};
  CHECK(FormatFailureReport({first}, context).find("hint") == std::string::npos);
  context.stderr_tails = {{0, traceback}};
  context.interpreter = "";  // --no-python: muster chose no interpreter
  CHECK(FormatFailureReport({first}, context).find("hint") == std::string::npos);
}

TEST_CASE("an error file saying torch is missing gets the hint too", "[report]") {
  CHECK(SaysTorchIsMissing("ModuleNotFoundError: No module named 'torch'"));
  CHECK_FALSE(SaysTorchIsMissing("ModuleNotFoundError: No module named 'torch.distributed'"));
  CHECK_FALSE(SaysTorchIsMissing("ModuleNotFoundError: No module named 'torchvision'"));
}
