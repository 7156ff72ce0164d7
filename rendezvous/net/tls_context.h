// TlsContext: the TLS settings of the rendezvous connection (agent <->
// musterd), loaded once from PEM files and shared by every connection of a
// process (OpenSSL's SSL_CTX).
//
//   - A server (musterd, or an agent serving the rendezvous) presents
//     `cert` with `key`; with `client_ca` it requires every peer to present
//     a certificate that chains to it (mutual TLS).
//   - A client (an agent, `muster status`) trusts `ca` (the system's CAs when
//     empty) and presents `cert` with `key` when given. It checks the server's
//     certificate names the host it dialled (TlsStream).
//
// Loading checks everything a connection would otherwise find out late: a
// file that cannot be read, is not PEM, or a key that does not belong to its
// certificate is an InvalidArgument naming the flag (as the caller spells it:
// `--tls-cert`, or `tls_cert` of --rdzv-conf) and the file. A key file that
// others may read makes a warning (LooseFileWarning), not an error.
//
// TLS 1.2 at least. Every connection keeps only what its live records need
// (OpenSSL's release-buffers mode) and a server issues no session tickets:
// no 34 KiB of record buffers per idle connection. What stays is the
// session: about 14 KiB per agent, 23 KiB with a client certificate
// (docs/benchmarks.md, "TLS: 10,000 agents and the join").
//
// Thread-safety: a loaded context is immutable and may be shared.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

struct ssl_ctx_st;

namespace muster::rdzv {

// A PEM file and the flag (or key) it was given by, for messages.
struct TlsFile {
  std::string path;  // empty: not given
  std::string flag;  // "--tls-cert", "tls_cert", ...
  bool given() const { return !path.empty(); }
};

struct TlsServerFiles {
  TlsFile cert{"", "--tls-cert"};
  TlsFile key{"", "--tls-key"};
  TlsFile client_ca{"", "--tls-client-ca"};  // given: mutual TLS
  bool any() const { return cert.given() || key.given() || client_ca.given(); }
};

struct TlsClientFiles {
  TlsFile ca{"", "tls_ca"};  // empty: the system's trusted CAs
  TlsFile cert{"", "tls_cert"};
  TlsFile key{"", "tls_key"};
  bool any() const { return ca.given() || cert.given() || key.given(); }
};

class TlsContext {
 public:
  enum class Side { kServer, kClient };

  // Errors: cert without key (or the reverse), a client CA without a
  // certificate to serve, an unreadable or non-PEM file, a key that is not
  // the certificate's. `warnings` gets one line per key file others may read.
  static Result<std::shared_ptr<const TlsContext>> ForServer(const TlsServerFiles& files,
                                                             std::vector<std::string>* warnings);
  static Result<std::shared_ptr<const TlsContext>> ForClient(const TlsClientFiles& files,
                                                             std::vector<std::string>* warnings);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  Side side() const { return side_; }
  // Server: whether peers must present a certificate (a client CA was given).
  bool mutual() const { return mutual_; }
  ssl_ctx_st* native() const { return ctx_; }

 private:
  TlsContext(ssl_ctx_st* ctx, Side side, bool mutual) : ctx_(ctx), side_(side), mutual_(mutual) {}

  ssl_ctx_st* ctx_;
  Side side_;
  bool mutual_;
};

// A warning when `path` (a key or a token file, `what` naming it) may be read
// by users other than its owner and group: "--tls-key '/etc/k.pem' is
// readable by every user (mode 0644); chmod o-rwx it". nullopt otherwise, or
// when it cannot be stat'ed (reading it will report that). The group is
// trusted: a daemon's group reading its key (0640) is the usual setup.
std::optional<std::string> LooseFileWarning(const std::string& what, const std::string& path);
// The rule on a mode alone (st_mode bits), for tests.
bool ModeIsLoose(unsigned mode);

}  // namespace muster::rdzv
