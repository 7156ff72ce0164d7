// How a rendezvous connection ended, as its owner is told: the client's
// decider (client_machine.h) reads it without any I/O of its own.
#pragma once

namespace muster::rdzv {

enum class ChannelEnd {
  kLocal,      // closed here, timed out, or failed locally
  kPeerGone,   // the peer's side closed or reset the connection (its host answered)
  kTlsFailed,  // TLS refused the connection (certificate, alert, protocol)
};

}  // namespace muster::rdzv
