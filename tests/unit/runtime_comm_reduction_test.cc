#include <catch2/catch.hpp>

#include <vector>

#include "worker_runtime/comm/gloo/allreduce_algorithm.h"
#include "worker_runtime/comm/host_reduction.h"

using muster::runtime::ChooseGlooAllreduce;
using muster::runtime::CommError;
using muster::runtime::DataType;
using muster::runtime::DivideInPlace;
using muster::runtime::GlooAllreduce;
using muster::runtime::GlooAllreduceName;
using muster::runtime::ParseGlooAllreduce;

TEST_CASE("average divides every element by the world size", "[comm]") {
  // Sums as Gloo would leave them for 3 ranks; the expected averages are
  // written out, not recomputed.
  std::vector<float> f32 = {9, 15, 0, -4.5f};
  DivideInPlace(f32.data(), f32.size(), DataType::kFloat32, 3);
  CHECK(f32 == std::vector<float>{3, 5, 0, -1.5f});
  std::vector<double> f64 = {3.0, 1.0, 0.5};
  DivideInPlace(f64.data(), f64.size(), DataType::kFloat64, 2);
  CHECK(f64 == std::vector<double>{1.5, 0.5, 0.25});
}

TEST_CASE("average reads each buffer with its element type", "[comm]") {
  // float64 divisors applied to float32 storage (or the reverse) would
  // scramble the bit patterns; only `count` elements are touched.
  std::vector<float> f32 = {8, 8, 8};
  DivideInPlace(f32.data(), 2, DataType::kFloat32, 4);
  CHECK(f32 == std::vector<float>{2, 2, 8});
  std::vector<double> f64 = {1e300, -6, 7};
  DivideInPlace(f64.data(), 2, DataType::kFloat64, 2);
  CHECK(f64 == std::vector<double>{5e299, -3, 7});
}

TEST_CASE("average on host memory refuses 16-bit types", "[comm]") {
  std::vector<uint16_t> halves = {1, 2};
  CHECK_THROWS_AS(DivideInPlace(halves.data(), halves.size(), DataType::kFloat16, 2), CommError);
}

TEST_CASE("messages below 1 MB use bcube, larger ones the ring", "[comm]") {
  CHECK(ChooseGlooAllreduce(4, 2, false) == GlooAllreduce::kBcube);
  CHECK(ChooseGlooAllreduce(4, 4, false) == GlooAllreduce::kBcube);
  CHECK(ChooseGlooAllreduce((1 << 20) - 1, 8, false) == GlooAllreduce::kBcube);
  CHECK(ChooseGlooAllreduce(1 << 20, 2, false) == GlooAllreduce::kRing);
  CHECK(ChooseGlooAllreduce(256u << 20, 4, false) == GlooAllreduce::kRing);
}

TEST_CASE("ranks sharing a segment use it at every size and world", "[comm]") {
  for (size_t bytes : {size_t{4}, size_t{1} << 20, size_t{256} << 20}) {
    for (int world : {2, 3, 4}) {
      CHECK(ChooseGlooAllreduce(bytes, world, true) == GlooAllreduce::kSharedMemory);
    }
  }
}

TEST_CASE("worlds that are no power of two, or of one rank, never get bcube", "[comm]") {
  CHECK(ChooseGlooAllreduce(4, 3, false) == GlooAllreduce::kRing);
  CHECK(ChooseGlooAllreduce(4, 6, false) == GlooAllreduce::kRing);
  CHECK(ChooseGlooAllreduce(4, 1, false) == GlooAllreduce::kRing);
}

TEST_CASE("the allreduce override accepts each algorithm's name and auto", "[comm]") {
  for (GlooAllreduce algorithm :
       {GlooAllreduce::kRing, GlooAllreduce::kBcube, GlooAllreduce::kSharedMemory}) {
    auto parsed = ParseGlooAllreduce(GlooAllreduceName(algorithm));
    REQUIRE(parsed.ok());
    CHECK(*parsed == algorithm);
  }
  CHECK_FALSE(ParseGlooAllreduce("auto")->has_value());
  CHECK_FALSE(ParseGlooAllreduce("")->has_value());
  auto bad = ParseGlooAllreduce("halving_doubling");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("'halving_doubling'") != std::string::npos);
}
