#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "worker_runtime/checkpoint/checkpoint.h"
#include "worker_runtime/checkpoint/checkpoint_directory.h"
#include "worker_runtime/checkpoint/crc32c.h"

using namespace muster;
using namespace muster::runtime;
namespace fs = std::filesystem;

namespace {

// A fresh directory under the system temp dir, removed with its contents.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "muster-ckpt-test-XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return (fs::path(path_) / name).string(); }

 private:
  std::string path_;
};

// Routes the default logger into a string while alive.
class LogCapture {
 public:
  LogCapture()
      : previous_(spdlog::default_logger()),
        sink_(std::make_shared<spdlog::sinks::ostream_sink_st>(stream_)) {
    auto logger = std::make_shared<spdlog::logger>("capture", sink_);
    logger->set_pattern("%l %v");
    spdlog::set_default_logger(logger);
  }
  ~LogCapture() { spdlog::set_default_logger(previous_); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  std::vector<std::string> Lines() const {
    std::vector<std::string> lines;
    std::istringstream in(stream_.str());
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }
  void Clear() { stream_.str(""); }

 private:
  std::ostringstream stream_;
  std::shared_ptr<spdlog::logger> previous_;
  std::shared_ptr<spdlog::sinks::ostream_sink_st> sink_;
};

Checkpoint SampleCheckpoint(uint64_t step) {
  Checkpoint ckpt;
  ckpt.step = step;
  ckpt.epoch = 3;
  ckpt.sampler_position = 1024;
  ckpt.metadata = R"({"lr":0.01,"batch":64})";
  ckpt.tensors = {{"model.weight", {1.5f, -2.25f, 0.0f, 3.0e-39f}},
                  {"model.bias", {}},
                  {"optimizer.momentum", {std::numeric_limits<float>::infinity(), -7.0f}}};
  return ckpt;
}

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

std::optional<Checkpoint> LoadOrFail(const std::string& dir) {
  Result<std::optional<Checkpoint>> loaded = LoadNewestCheckpoint(dir);
  REQUIRE(loaded.ok());
  return *loaded;
}

std::vector<std::string> DirectoryNames(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

void StoreLittleEndian64(std::string& bytes, size_t offset, uint64_t value) {
  for (int i = 0; i < 8; ++i) bytes[offset + i] = static_cast<char>(value >> (8 * i));
}

}  // namespace

TEST_CASE("CRC-32C matches the standard check value and extends in pieces", "[checkpoint]") {
  CHECK(Crc32cExtend(0, "123456789", 9) == 0xE3069283u);
  CHECK(Crc32cExtend(0, "", 0) == 0u);
  const std::string text = "the quick brown fox jumps over the lazy dog, twice over";
  const uint32_t whole = Crc32cExtend(0, text.data(), text.size());
  for (size_t split = 0; split <= text.size(); ++split) {
    CHECK(Crc32cExtend(Crc32cExtend(0, text.data(), split), text.data() + split,
                       text.size() - split) == whole);
  }
}

TEST_CASE("a checkpoint reads back exactly as written", "[checkpoint]") {
  TempDir dir;
  const Checkpoint written = SampleCheckpoint(42);
  REQUIRE(WriteCheckpoint(dir.path(), written).ok());
  CHECK(DirectoryNames(dir.path()) == std::vector<std::string>{"ckpt-000000000042.mck"});

  const std::optional<Checkpoint> loaded = LoadOrFail(dir.path());
  REQUIRE(loaded.has_value());
  CHECK(*loaded == written);
  CHECK(std::signbit(loaded->tensors[0].second[2]) == false);
}

TEST_CASE("tensors larger than the I/O buffer round trip", "[checkpoint]") {
  TempDir dir;
  Checkpoint written = SampleCheckpoint(7);
  std::vector<float> large(700'000);
  for (size_t i = 0; i < large.size(); ++i) large[i] = static_cast<float>(i) * 0.5f;
  written.tensors.emplace_back("embedding", large);
  written.tensors.emplace_back("tail", std::vector<float>{1.0f});
  REQUIRE(WriteCheckpoint(dir.path(), written).ok());
  const std::optional<Checkpoint> loaded = LoadOrFail(dir.path());
  REQUIRE(loaded.has_value());
  CHECK(*loaded == written);
}

TEST_CASE("the directory is created when missing", "[checkpoint]") {
  TempDir dir;
  const std::string nested = dir.File("run/checkpoints");
  REQUIRE(WriteCheckpoint(nested, SampleCheckpoint(1)).ok());
  CHECK(fs::exists(fs::path(nested) / "ckpt-000000000001.mck"));
}

TEST_CASE("only the newest keep_last checkpoints remain", "[checkpoint]") {
  TempDir dir;
  for (uint64_t step = 1; step <= 5; ++step) {
    REQUIRE(WriteCheckpoint(dir.path(), SampleCheckpoint(step * 100), /*keep_last=*/2).ok());
  }
  CHECK(DirectoryNames(dir.path()) ==
        std::vector<std::string>{"ckpt-000000000400.mck", "ckpt-000000000500.mck"});

  REQUIRE(WriteCheckpoint(dir.path(), SampleCheckpoint(600), /*keep_last=*/1).ok());
  CHECK(DirectoryNames(dir.path()) == std::vector<std::string>{"ckpt-000000000600.mck"});

  // An older step written after a newer one is kept: it was just asked for.
  REQUIRE(WriteCheckpoint(dir.path(), SampleCheckpoint(50), /*keep_last=*/1).ok());
  CHECK(DirectoryNames(dir.path()) ==
        std::vector<std::string>{"ckpt-000000000050.mck", "ckpt-000000000600.mck"});
}

TEST_CASE("a checkpoint of an existing step replaces it", "[checkpoint]") {
  TempDir dir;
  Checkpoint first = SampleCheckpoint(10);
  REQUIRE(WriteCheckpoint(dir.path(), first).ok());
  Checkpoint second = first;
  second.metadata = R"({"rewritten":true})";
  REQUIRE(WriteCheckpoint(dir.path(), second).ok());
  CHECK(DirectoryNames(dir.path()).size() == 1);
  CHECK(LoadOrFail(dir.path())->metadata == second.metadata);
}

TEST_CASE("keep_last below one is refused before anything is written", "[checkpoint]") {
  TempDir dir;
  const Status status = WriteCheckpoint(dir.path(), SampleCheckpoint(1), 0);
  CHECK(status.IsInvalidArgument());
  CHECK_THAT(status.message(), Catch::Contains("keep_last=0"));
  CHECK(DirectoryNames(dir.path()).empty());
}

TEST_CASE("a write that cannot create the directory names the path", "[checkpoint]") {
  TempDir dir;
  WriteBytes(dir.File("not-a-dir"), "x");
  const std::string target = dir.File("not-a-dir/checkpoints");
  const Status status = WriteCheckpoint(target, SampleCheckpoint(1));
  CHECK(status.IsIoError());
  CHECK_THAT(status.message(), Catch::Contains(target));
}

TEST_CASE("a missing or empty directory holds no checkpoint", "[checkpoint]") {
  TempDir dir;
  CHECK_FALSE(LoadOrFail(dir.File("absent")).has_value());
  CHECK_FALSE(LoadOrFail(dir.path()).has_value());
}

TEST_CASE("a directory path that is a file is an error", "[checkpoint]") {
  TempDir dir;
  WriteBytes(dir.File("plain"), "x");
  Result<std::optional<Checkpoint>> loaded = LoadNewestCheckpoint(dir.File("plain"));
  REQUIRE_FALSE(loaded.ok());
  CHECK(loaded.status().IsIoError());
  CHECK_THAT(loaded.status().message(), Catch::Contains(dir.File("plain")));
}

TEST_CASE("a checkpoint cut at any length is skipped for the previous one", "[checkpoint]") {
  TempDir dir;
  REQUIRE(WriteCheckpoint(dir.path(), SampleCheckpoint(1)).ok());
  REQUIRE(WriteCheckpoint(dir.path(), SampleCheckpoint(2)).ok());
  const std::string newest = dir.File(CheckpointFileName(2));
  const std::string intact = ReadBytes(newest);
  REQUIRE(intact.size() > 100);

  LogCapture log;
  for (size_t cut = 0; cut < intact.size(); ++cut) {
    INFO("cut at byte " << cut << " of " << intact.size());
    WriteBytes(newest, intact.substr(0, cut));
    log.Clear();
    const std::optional<Checkpoint> loaded = LoadOrFail(dir.path());
    REQUIRE(loaded.has_value());
    CHECK(loaded->step == 1);
    const std::vector<std::string> lines = log.Lines();
    REQUIRE(lines.size() == 1);
    CHECK_THAT(lines[0], Catch::StartsWith("warning") && Catch::Contains(newest));
  }
  WriteBytes(newest, intact);
  CHECK(LoadOrFail(dir.path())->step == 2);
}

TEST_CASE("a checkpoint with any byte flipped is skipped", "[checkpoint]") {
  TempDir dir;
  REQUIRE(WriteCheckpoint(dir.path(), SampleCheckpoint(1)).ok());
  REQUIRE(WriteCheckpoint(dir.path(), SampleCheckpoint(2)).ok());
  const std::string newest = dir.File(CheckpointFileName(2));
  const std::string intact = ReadBytes(newest);

  LogCapture log;
  for (size_t offset = 0; offset < intact.size(); ++offset) {
    for (unsigned char mask : {0x01, 0x80, 0xFF}) {
      INFO("byte " << offset << " xor " << int{mask});
      std::string corrupt = intact;
      corrupt[offset] = static_cast<char>(corrupt[offset] ^ mask);
      WriteBytes(newest, corrupt);
      log.Clear();
      CHECK(LoadOrFail(dir.path())->step == 1);
      CHECK(log.Lines().size() == 1);
    }
  }
}

TEST_CASE("the skip warning says why the file was rejected", "[checkpoint]") {
  TempDir dir;
  REQUIRE(WriteCheckpoint(dir.path(), SampleCheckpoint(1)).ok());
  REQUIRE(WriteCheckpoint(dir.path(), SampleCheckpoint(2)).ok());
  const std::string newest = dir.File(CheckpointFileName(2));
  const std::string intact = ReadBytes(newest);
  LogCapture log;

  WriteBytes(newest, intact.substr(0, intact.size() - 1));
  CHECK(LoadOrFail(dir.path())->step == 1);
  CHECK_THAT(log.Lines().at(0), Catch::Contains("torn write"));

  log.Clear();
  std::string flipped_data = intact;
  flipped_data[60] = static_cast<char>(flipped_data[60] ^ 0x10);  // inside the metadata
  WriteBytes(newest, flipped_data);
  CHECK(LoadOrFail(dir.path())->step == 1);
  CHECK_THAT(log.Lines().at(0), Catch::Contains("checksum mismatch"));
}

TEST_CASE("a corrupt length is rejected without allocating it", "[checkpoint]") {
  TempDir dir;
  REQUIRE(WriteCheckpoint(dir.path(), SampleCheckpoint(1)).ok());
  REQUIRE(WriteCheckpoint(dir.path(), SampleCheckpoint(2)).ok());
  const std::string newest = dir.File(CheckpointFileName(2));
  std::string huge = ReadBytes(newest);
  StoreLittleEndian64(huge, 44, uint64_t{1} << 62);  // the metadata length field
  WriteBytes(newest, huge);
  LogCapture log;
  CHECK(LoadOrFail(dir.path())->step == 1);
  CHECK_THAT(log.Lines().at(0), Catch::Contains("metadata length"));
}

TEST_CASE("a garbage file with a checkpoint name is skipped", "[checkpoint]") {
  TempDir dir;
  REQUIRE(WriteCheckpoint(dir.path(), SampleCheckpoint(2)).ok());
  WriteBytes(dir.File(CheckpointFileName(9)), std::string(4096, 'z'));
  WriteBytes(dir.File(CheckpointFileName(8)), "");
  LogCapture log;
  CHECK(LoadOrFail(dir.path())->step == 2);
  CHECK(log.Lines().size() == 2);
}

TEST_CASE("a valid file renamed to another step is skipped", "[checkpoint]") {
  TempDir dir;
  REQUIRE(WriteCheckpoint(dir.path(), SampleCheckpoint(2), 10).ok());
  REQUIRE(WriteCheckpoint(dir.path(), SampleCheckpoint(3), 10).ok());
  fs::rename(dir.File(CheckpointFileName(3)), dir.File(CheckpointFileName(30)));
  LogCapture log;
  CHECK(LoadOrFail(dir.path())->step == 2);
  CHECK_THAT(log.Lines().at(0), Catch::Contains("named for step 30"));
}

TEST_CASE("temp files and foreign names are ignored", "[checkpoint]") {
  TempDir dir;
  REQUIRE(WriteCheckpoint(dir.path(), SampleCheckpoint(2)).ok());
  const std::string valid_newer = ReadBytes(dir.File(CheckpointFileName(2)));
  // A finished-looking write that was never renamed, and names that are not ours.
  WriteBytes(dir.File("." + CheckpointFileName(9) + ".tmp-123-0"), valid_newer);
  WriteBytes(dir.File("ckpt-9.mck"), valid_newer);
  WriteBytes(dir.File(CheckpointFileName(9) + ".bak"), valid_newer);
  LogCapture log;
  CHECK(LoadOrFail(dir.path())->step == 2);
  CHECK(log.Lines().empty());
}

TEST_CASE("temp files left by crashed writes are removed by the next write", "[checkpoint]") {
  TempDir dir;
  REQUIRE(WriteCheckpoint(dir.path(), SampleCheckpoint(2)).ok());
  const std::string valid = ReadBytes(dir.File(CheckpointFileName(2)));
  // What two crashed writes (before their rename) leave behind, and names
  // that only look similar: those are not ours to delete.
  WriteBytes(dir.File(CheckpointTempFileName(3, "123-0")), valid);
  WriteBytes(dir.File(CheckpointTempFileName(2, "456-7")), "torn");
  WriteBytes(dir.File(".ckpt-42.mck.tmp-1-0"), "foreign");
  WriteBytes(dir.File("notes.tmp-1"), "foreign");
  CHECK(IsCheckpointTempFileName(CheckpointTempFileName(3, "123-0")));
  CHECK_FALSE(IsCheckpointTempFileName(".ckpt-42.mck.tmp-1-0"));
  CHECK_FALSE(IsCheckpointTempFileName(CheckpointFileName(3)));

  LogCapture log;
  REQUIRE(WriteCheckpoint(dir.path(), SampleCheckpoint(4), /*keep_last=*/5).ok());
  CHECK(DirectoryNames(dir.path()) ==
        std::vector<std::string>{".ckpt-42.mck.tmp-1-0", CheckpointFileName(2),
                                 CheckpointFileName(4), "notes.tmp-1"});
  CHECK(log.Lines().empty());
  CHECK(LoadOrFail(dir.path())->step == 4);
}

TEST_CASE("the newest valid checkpoint wins over older and broken ones", "[checkpoint]") {
  TempDir dir;
  for (uint64_t step : {5, 1, 30, 200}) {
    REQUIRE(WriteCheckpoint(dir.path(), SampleCheckpoint(step), /*keep_last=*/10).ok());
  }
  CHECK(LoadOrFail(dir.path())->step == 200);

  LogCapture log;
  WriteBytes(dir.File(CheckpointFileName(200)), "broken");
  CHECK(LoadOrFail(dir.path())->step == 30);
  WriteBytes(dir.File(CheckpointFileName(30)), "broken");
  CHECK(LoadOrFail(dir.path())->step == 5);
  for (uint64_t step : {5, 1}) WriteBytes(dir.File(CheckpointFileName(step)), "broken");
  log.Clear();
  CHECK_FALSE(LoadOrFail(dir.path()).has_value());
  CHECK(log.Lines().size() == 4);
}

TEST_CASE("checkpoint names sort by step and reject look-alikes", "[checkpoint]") {
  CHECK(CheckpointFileName(42) == "ckpt-000000000042.mck");
  CHECK(CheckpointFileName(1234567890123) == "ckpt-1234567890123.mck");
  CHECK(ParseCheckpointFileName("ckpt-000000000042.mck") == 42u);
  CHECK(ParseCheckpointFileName("ckpt-1234567890123.mck") == 1234567890123u);
  CHECK_FALSE(ParseCheckpointFileName("ckpt-42.mck").has_value());
  CHECK_FALSE(ParseCheckpointFileName("ckpt-00000000004x.mck").has_value());
  CHECK_FALSE(ParseCheckpointFileName(".ckpt-000000000042.mck.tmp-1-0").has_value());
  CHECK_FALSE(ParseCheckpointFileName("ckpt-99999999999999999999.mck").has_value());
}
