#include "worker_runtime/recovery/membership.h"

namespace muster::runtime {

Membership Membership::Initial(const Context& ctx) {
  return {.ctx = ctx, .store_prefix = ctx.StoreNamespace(), .joining = std::nullopt};
}

Membership Membership::Joining(const control::Join& join) const {
  Membership next = *this;
  next.ctx.rank = join.rank;
  next.ctx.world_size = join.world_size;
  next.ctx.local_rank = join.local_rank;
  next.ctx.master_addr = join.master_addr;
  next.ctx.master_port = join.master_port;
  next.store_prefix = join.store_prefix;
  next.joining = join.generation;
  return next;
}

}  // namespace muster::runtime
