// Role: what a musterd replica is to the rendezvous. The election
// (rendezvous/replica/leader_election.h) moves a replica between starting,
// standby and leader; a daemon without --etcd is standalone, and always
// serves. A value of the pure state layer (replica_status.h holds one), named
// `replica::Role` after whose role it is; the election above uses it.
#pragma once

namespace muster::rdzv::replica {

enum class Role { kStandalone, kStarting, kStandby, kLeader };

// "standalone", "starting", "standby", "leader": as status and metrics show it.
constexpr const char* RoleName(Role role) {
  switch (role) {
    case Role::kStandalone:
      return "standalone";
    case Role::kStarting:
      return "starting";
    case Role::kStandby:
      return "standby";
    case Role::kLeader:
      return "leader";
  }
  return "?";
}

// Every role, in the order metrics list them.
inline constexpr Role kRoles[] = {Role::kStandalone, Role::kStarting, Role::kStandby,
                                  Role::kLeader};

}  // namespace muster::rdzv::replica
