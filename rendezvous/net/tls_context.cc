#include "rendezvous/net/tls_context.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "common/quote.h"

namespace muster::rdzv {
namespace {

// The reason of OpenSSL's latest error, cleared from its queue.
std::string OpensslReason() {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "unknown OpenSSL error";
  char text[256];
  ERR_error_string_n(code, text, sizeof text);
  // "error:0A000086:SSL routines::certificate verify failed": the reason is
  // the last field.
  const char* reason = std::strrchr(text, ':');
  return reason != nullptr && reason[1] != '\0' ? std::string(reason + 1) : std::string(text);
}

Status Readable(const TlsFile& file) {
  std::ifstream in(file.path);
  if (!in) {
    return Status::InvalidArgument(file.flag + " " + Quote(file.path) + ": cannot read it (" +
                                   std::strerror(errno) + ")");
  }
  return Status::Ok();
}

Status LoadCertificate(SSL_CTX* ctx, const TlsFile& cert, const TlsFile& key,
                       std::vector<std::string>* warnings) {
  if (Status s = Readable(cert); !s.ok()) return s;
  if (Status s = Readable(key); !s.ok()) return s;
  if (SSL_CTX_use_certificate_chain_file(ctx, cert.path.c_str()) != 1) {
    return Status::InvalidArgument(cert.flag + " " + Quote(cert.path) +
                                   ": not a PEM certificate (" + OpensslReason() + ")");
  }
  // Read apart from the context, so a file that is no key and a key that
  // is not the certificate's are told apart.
  EVP_PKEY* private_key = nullptr;
  if (FILE* in = std::fopen(key.path.c_str(), "r")) {
    private_key = PEM_read_PrivateKey(in, nullptr, nullptr, nullptr);
    std::fclose(in);
  }
  if (private_key == nullptr) {
    return Status::InvalidArgument(key.flag + " " + Quote(key.path) + ": not a PEM private key (" +
                                   OpensslReason() + ")");
  }
  const bool matches = SSL_CTX_use_PrivateKey(ctx, private_key) == 1;
  EVP_PKEY_free(private_key);
  if (!matches) {
    ERR_clear_error();
    return Status::InvalidArgument(key.flag + " " + Quote(key.path) + " is not the key of " +
                                   cert.flag + " " + Quote(cert.path));
  }
  if (auto warning = LooseFileWarning(key.flag, key.path); warning && warnings) {
    warnings->push_back(*warning);
  }
  return Status::Ok();
}

Status LoadTrust(SSL_CTX* ctx, const TlsFile& ca) {
  if (Status s = Readable(ca); !s.ok()) return s;
  if (SSL_CTX_load_verify_locations(ctx, ca.path.c_str(), nullptr) != 1) {
    return Status::InvalidArgument(ca.flag + " " + Quote(ca.path) + ": not a PEM certificate (" +
                                   OpensslReason() + ")");
  }
  return Status::Ok();
}

Status PairGiven(const TlsFile& cert, const TlsFile& key) {
  if (cert.given() == key.given()) return Status::Ok();
  return Status::InvalidArgument(cert.given()
                                     ? cert.flag + " " + Quote(cert.path) + " needs " + key.flag
                                     : key.flag + " " + Quote(key.path) + " needs " + cert.flag);
}

SSL_CTX* NewContext(bool server) {
  SSL_CTX* ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
  if (ctx == nullptr) return nullptr;
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  // Buffers only while records are in flight; writes may be partial and
  // retried from a moved buffer (TlsStream writes what is queued).
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ENABLE_PARTIAL_WRITE |
                            SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  // A record's header and body (and any records behind them) in one read
  // of the socket, not two: one system call less per heartbeat. The buffer
  // is still released once every byte read has been consumed.
  SSL_CTX_set_read_ahead(ctx, 1);
  // A peer that closes without close_notify is an end of stream, as on a
  // plain socket: the rendezvous protocol has its own goodbyes.
  SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
  if (server) {
    // Agents hold one long connection: no resumption to serve.
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_num_tickets(ctx, 0);
  }
  return ctx;
}

}  // namespace

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

Result<std::shared_ptr<const TlsContext>> TlsContext::ForServer(
    const TlsServerFiles& files, std::vector<std::string>* warnings) {
  if (Status s = PairGiven(files.cert, files.key); !s.ok()) return s;
  if (files.client_ca.given() && !files.cert.given()) {
    return Status::InvalidArgument(files.client_ca.flag + " " + Quote(files.client_ca.path) +
                                   " needs " + files.cert.flag + " and " + files.key.flag);
  }
  SSL_CTX* raw = NewContext(true);
  if (raw == nullptr) return Status::IoError("cannot make a TLS context: " + OpensslReason());
  std::shared_ptr<const TlsContext> made(
      new TlsContext(raw, Side::kServer, files.client_ca.given()));
  if (Status s = LoadCertificate(raw, files.cert, files.key, warnings); !s.ok()) return s;
  if (files.client_ca.given()) {
    if (Status s = LoadTrust(raw, files.client_ca); !s.ok()) return s;
    SSL_CTX_set_verify(raw, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
  return made;
}

Result<std::shared_ptr<const TlsContext>> TlsContext::ForClient(
    const TlsClientFiles& files, std::vector<std::string>* warnings) {
  if (Status s = PairGiven(files.cert, files.key); !s.ok()) return s;
  SSL_CTX* raw = NewContext(false);
  if (raw == nullptr) return Status::IoError("cannot make a TLS context: " + OpensslReason());
  std::shared_ptr<const TlsContext> made(new TlsContext(raw, Side::kClient, false));
  if (files.ca.given()) {
    if (Status s = LoadTrust(raw, files.ca); !s.ok()) return s;
  } else if (SSL_CTX_set_default_verify_paths(raw) != 1) {
    return Status::IoError("the system's trusted CAs: " + OpensslReason());
  }
  if (files.cert.given()) {
    if (Status s = LoadCertificate(raw, files.cert, files.key, warnings); !s.ok()) return s;
  }
  SSL_CTX_set_verify(raw, SSL_VERIFY_PEER, nullptr);
  return made;
}

// The group may read: the .deb's token file is root:musterd 0640.
bool ModeIsLoose(unsigned mode) { return (mode & S_IRWXO) != 0; }

std::optional<std::string> LooseFileWarning(const std::string& what, const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !ModeIsLoose(st.st_mode)) return std::nullopt;
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", st.st_mode & 07777);
  return what + " " + Quote(path) + " is readable by every user (mode " + mode +
         "); chmod o-rwx it";
}

}  // namespace muster::rdzv
