// runtime_store_probe: drives a StoreClient from a line protocol, so that the
// integration tests can interleave its calls with those of other clients.
//
//   runtime_store_probe HOST PORT PREFIX [TIMEOUT_MS [CONNECT_TIMEOUT_MS]]
//
// stdout: "connected elapsed_ms=N" (or "error=CODE elapsed_ms=N MESSAGE" and
// exit 1), then one line per stdin command:
//   set KEY VALUE                  -> ok
//   get KEY TIMEOUT_MS             -> value=V elapsed_ms=N
//   add KEY DELTA                  -> value=N
//   cas KEY EXPECTED DESIRED       -> value=V
//   check KEY...                   -> value=true|false
//   wait TIMEOUT_MS KEY...         -> ok elapsed_ms=N
//   delete KEY                     -> value=true|false
// Any failure prints "error=CODE elapsed_ms=N MESSAGE". The word <empty>
// stands for an empty KEY, VALUE, EXPECTED or DESIRED.
#include <chrono>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "worker_runtime/store/store_client.h"

namespace {

using muster::Status;
using muster::runtime::StoreClient;
using Clock = std::chrono::steady_clock;

std::string CodeName(const Status& status) {
  switch (status.code()) {
    case Status::Code::kOk:
      return "Ok";
    case Status::Code::kInvalidArgument:
      return "InvalidArgument";
    case Status::Code::kNotFound:
      return "NotFound";
    case Status::Code::kIoError:
      return "IoError";
    case Status::Code::kTimeout:
      return "Timeout";
    case Status::Code::kFailedPrecondition:
      return "FailedPrecondition";
  }
  return "Unknown";
}

std::string Word(const std::string& word) { return word == "<empty>" ? std::string() : word; }

long ElapsedMs(Clock::time_point start) {
  return static_cast<long>(
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count());
}

std::string Error(const Status& status, Clock::time_point start) {
  return "error=" + CodeName(status) + " elapsed_ms=" + std::to_string(ElapsedMs(start)) + " " +
         status.message();
}

std::string Run(StoreClient& store, const std::vector<std::string>& words) {
  const auto start = Clock::now();
  const std::string& command = words[0];
  const auto ms = [](const std::string& text) { return StoreClient::Timeout(std::stol(text)); };
  if (command == "set" && words.size() == 3) {
    Status status = store.Set(Word(words[1]), Word(words[2]));
    return status.ok() ? "ok" : Error(status, start);
  }
  if (command == "get" && words.size() == 3) {
    auto value = store.Get(Word(words[1]), ms(words[2]));
    if (!value.ok()) return Error(value.status(), start);
    return "value=" + *value + " elapsed_ms=" + std::to_string(ElapsedMs(start));
  }
  if (command == "add" && words.size() == 3) {
    auto sum = store.Add(Word(words[1]), std::stoll(words[2]));
    return sum.ok() ? "value=" + std::to_string(*sum) : Error(sum.status(), start);
  }
  if (command == "cas" && words.size() == 4) {
    auto now = store.CompareSet(Word(words[1]), Word(words[2]), Word(words[3]));
    return now.ok() ? "value=" + *now : Error(now.status(), start);
  }
  if (command == "check" && words.size() >= 2) {
    auto ready = store.Check({words.begin() + 1, words.end()});
    if (!ready.ok()) return Error(ready.status(), start);
    return std::string("value=") + (*ready ? "true" : "false");
  }
  if (command == "wait" && words.size() >= 3) {
    Status status = store.Wait({words.begin() + 2, words.end()}, ms(words[1]));
    if (!status.ok()) return Error(status, start);
    return "ok elapsed_ms=" + std::to_string(ElapsedMs(start));
  }
  if (command == "delete" && words.size() == 2) {
    auto deleted = store.DeleteKey(Word(words[1]));
    if (!deleted.ok()) return Error(deleted.status(), start);
    return std::string("value=") + (*deleted ? "true" : "false");
  }
  return "error=Usage elapsed_ms=0 cannot parse command '" + command + "'";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4 || argc > 6) {
    std::cerr << "usage: runtime_store_probe HOST PORT PREFIX [TIMEOUT_MS [CONNECT_TIMEOUT_MS]]\n";
    return 2;
  }
  StoreClient::Options options;
  options.host = argv[1];
  options.port = std::stoi(argv[2]);
  options.prefix = argv[3] == std::string("<empty>") ? "" : argv[3];
  if (argc > 4) options.timeout = StoreClient::Timeout(std::stol(argv[4]));
  if (argc > 5) options.connect_timeout = StoreClient::Timeout(std::stol(argv[5]));

  const auto start = Clock::now();
  auto store = StoreClient::Connect(options);
  if (!store.ok()) {
    std::cout << Error(store.status(), start) << std::endl;
    return 1;
  }
  std::cout << "connected elapsed_ms=" << ElapsedMs(start) << std::endl;

  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::vector<std::string> words;
    for (std::string word; in >> word;) words.push_back(word);
    if (words.empty()) continue;
    std::cout << Run(**store, words) << std::endl;  // endl flushes: the test waits per line
  }
  return 0;
}
