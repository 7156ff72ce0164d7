// SLURM's host-list syntax ("gpu[001-016],login1"), expanded without calling
// `scontrol`. One parser for everything that reads a list of hosts: the
// launcher's host options and the worker runtime's SLURM_JOB_NODELIST.
//
// Syntax, as `scontrol show hostnames` reads it (tests/unit/host_list_cases.txt
// holds the cases checked against scontrol, and where muster departs from it):
//
//   list        items separated by ',', ' ' or '\t'; empty items are skipped
//               ("x,,y" -> x y, " n1 " -> n1). Duplicates are kept, in order.
//   item        text and bracket groups in any order: "n1", "gpu[001-016]",
//               "[1-2]" (-> 1 2), "rack[1-2]-n[3,5]".
//   bracket     '[' ranges separated by ',' ']'; a ',' inside brackets
//               separates ranges, not hosts: "gpu[001-003,010]" -> gpu001
//               gpu002 gpu003 gpu010.
//   range       N or N-M with decimal digits, N <= M, both below 2^64.
//   padding     every number of a range is zero-padded to the width of its
//               START as written: "n[01-3]" -> n01 n02 n03, "n[1-03]" -> n1
//               n2 n3, "n[9-11]" -> n9 n10 n11.
//   groups      several groups form a cartesian product, the leftmost group
//               varying slowest: "r[1-2]n[01-02]" -> r1n01 r1n02 r2n01 r2n02.
//   suffix      text after the last group is appended to every host:
//               "node[1-3]-ib" -> node1-ib node2-ib node3-ib. (SLURM 22.05's
//               scontrol rejects this form; SLURM already expands text
//               between groups this way, and pdsh-style hostlists accept it.)
//
// Errors are Status::InvalidArgument with one line of the form
//   '<list>' is not a host list: <what is wrong, quoting the bad part>
// so a caller prefixes the variable or option it came from
// ("SLURM_JOB_NODELIST='n[3-1]' is not a host list: range '3-1' ends below its
// start"). Control bytes of <list> are written as \xNN. Rejected: a '[' never
// closed or opened inside another, a ']' without its '[', empty brackets, an
// empty range ("n[1,]"), a range without start or end ("n[-2]", "n[1-]"), a
// non-digit in a range (signs and spaces included), a number of 2^64 or more,
// a range whose end is below its start, a control byte (other than '\t'), a
// list with no hosts ("", " , "), and a list of more than kMaxHostListHosts
// hosts. The limit is checked before anything is allocated for the hosts.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace muster {

// The most hosts a list may expand to; larger lists are an error, not an
// allocation of millions of strings.
inline constexpr size_t kMaxHostListHosts = 1'000'000;

// Every host `list` names, in order.
Result<std::vector<std::string>> ExpandHostList(std::string_view list);

// The first host of `list`: ExpandHostList(list)->front() when that succeeds,
// and the same error when it fails. The whole list is validated (the host
// limit included) but not expanded, so "n[1-999999]" costs no more than "n1".
Result<std::string> FirstHostOfList(std::string_view list);

}  // namespace muster
