#include <catch2/catch.hpp>

#include "rendezvous/client/outcome_report.h"

using muster::rdzv::Message;
using muster::rdzv::OutcomeReport;
using muster::rdzv::WorkerFailed;
using muster::rdzv::WorkersSucceeded;

TEST_CASE("no outcome is resent before one was reported", "[outcome_report]") {
  OutcomeReport report;
  CHECK(report.pending() == nullptr);
}

TEST_CASE("a reported outcome is kept for resending after a reconnect", "[outcome_report]") {
  OutcomeReport report;
  report.Record(3, WorkersSucceeded{"job", "n1", 3});
  REQUIRE(report.pending() != nullptr);
  CHECK(*report.pending() == Message{WorkersSucceeded{"job", "n1", 3}});
  // Still the current generation (an assignment for it may be repeated): kept.
  report.ForgetBefore(3);
  REQUIRE(report.pending() != nullptr);
  CHECK(*report.pending() == Message{WorkersSucceeded{"job", "n1", 3}});
}

TEST_CASE("the latest outcome replaces an earlier one", "[outcome_report]") {
  OutcomeReport report;
  report.Record(2, WorkerFailed{"job", "n1", 2, 5, "exit 5"});
  report.Record(4, WorkersSucceeded{"job", "n1", 4});
  REQUIRE(report.pending() != nullptr);
  CHECK(*report.pending() == Message{WorkersSucceeded{"job", "n1", 4}});
}

TEST_CASE("a newer generation makes the kept outcome moot", "[outcome_report]") {
  OutcomeReport report;
  report.Record(2, WorkerFailed{"job", "n1", 2, 5, "exit 5"});
  report.ForgetBefore(3);
  CHECK(report.pending() == nullptr);
  report.Record(3, WorkersSucceeded{"job", "n1", 3});
  report.Clear();
  CHECK(report.pending() == nullptr);
}
