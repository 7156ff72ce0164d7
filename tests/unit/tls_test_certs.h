// Certificates for TLS tests, made with OpenSSL at run time (no fixtures to
// expire): a CA, a server certificate for localhost and 127.0.0.1, a client
// certificate from the same CA, one that expired yesterday, and a client and a
// server certificate from another CA. Written as PEM files into a fresh
// directory, removed with the object.
#pragma once

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace muster::testing {

// When a test certificate is valid, in seconds from its making.
struct TlsCertValidity {
  long not_before = -3600;
  long not_after = 7 * 24 * 3600;
};

class TlsTestCerts {
 public:
  TlsTestCerts() {
    char pattern[] = "/tmp/muster-tls-XXXXXX";
    if (mkdtemp(pattern) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = pattern;
    Issued ca = Issue("muster test CA", nullptr, nullptr, "critical,CA:TRUE", "", "");
    Write(ca, "ca");
    Issue("localhost", &ca, "server", "CA:FALSE", "DNS:localhost,IP:127.0.0.1", "serverAuth");
    Issue("elsewhere", &ca, "elsewhere", "CA:FALSE", "DNS:elsewhere.invalid", "serverAuth");
    Issue("agent", &ca, "client", "CA:FALSE", "", "clientAuth");
    Issue("agent", &ca, "expired", "CA:FALSE", "", "clientAuth",
          TlsCertValidity{-2 * 24 * 3600, -24 * 3600});
    Issued other = Issue("another CA", nullptr, nullptr, "critical,CA:TRUE", "", "");
    Write(other, "other_ca");
    Issue("stranger", &other, "stranger", "CA:FALSE", "", "clientAuth");
    Issue("localhost", &other, "other_server", "CA:FALSE", "DNS:localhost,IP:127.0.0.1",
          "serverAuth");
    Free(ca);
    Free(other);
  }
  ~TlsTestCerts() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  TlsTestCerts(const TlsTestCerts&) = delete;
  TlsTestCerts& operator=(const TlsTestCerts&) = delete;

  // NAME.pem and NAME.key for: ca, server (localhost, 127.0.0.1), elsewhere
  // (names only elsewhere.invalid), client, expired (a client certificate of
  // ca valid from two days ago to yesterday), other_ca, stranger (a client
  // certificate from other_ca), other_server (a server certificate from
  // other_ca naming localhost and 127.0.0.1, as `server` does).
  std::string Cert(const std::string& name) const { return dir_ + "/" + name + ".pem"; }
  std::string Key(const std::string& name) const { return dir_ + "/" + name + ".key"; }
  const std::string& dir() const { return dir_; }

 private:
  struct Issued {
    X509* cert = nullptr;
    EVP_PKEY* key = nullptr;
  };

  // A certificate for `cn` signed by `issuer` (self-signed when null), valid
  // for `validity`, written as `file` (.pem, .key) when given.
  Issued Issue(const std::string& cn, const Issued* issuer, const char* file,
               const std::string& basic, const std::string& san, const std::string& usage,
               TlsCertValidity validity = {}) {
    Issued made;
    made.key = EVP_EC_gen("P-256");
    made.cert = X509_new();
    X509_set_version(made.cert, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(made.cert), ++serial_);
    X509_gmtime_adj(X509_getm_notBefore(made.cert), validity.not_before);
    X509_gmtime_adj(X509_getm_notAfter(made.cert), validity.not_after);
    X509_set_pubkey(made.cert, made.key);
    X509_NAME* name = X509_get_subject_name(made.cert);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
    const Issued& signer = issuer != nullptr ? *issuer : made;
    X509_set_issuer_name(made.cert, X509_get_subject_name(signer.cert));
    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, signer.cert, made.cert, nullptr, nullptr, 0);
    Extend(ctx, made.cert, NID_basic_constraints, basic);
    Extend(ctx, made.cert, NID_subject_alt_name, san);
    Extend(ctx, made.cert, NID_ext_key_usage, usage);
    if (X509_sign(made.cert, signer.key, EVP_sha256()) == 0) {
      throw std::runtime_error("X509_sign failed");
    }
    if (file != nullptr) {
      Write(made, file);
      Free(made);
    }
    return made;
  }

  static void Extend(X509V3_CTX& ctx, X509* cert, int nid, const std::string& value) {
    if (value.empty()) return;
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
    if (ext == nullptr) throw std::runtime_error("bad extension " + value);
    X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
  }

  void Write(const Issued& issued, const std::string& name) const {
    FILE* pem = std::fopen(Cert(name).c_str(), "w");
    FILE* key = std::fopen(Key(name).c_str(), "w");
    if (pem == nullptr || key == nullptr) throw std::runtime_error("cannot write " + name);
    PEM_write_X509(pem, issued.cert);
    PEM_write_PrivateKey(key, issued.key, nullptr, nullptr, 0, nullptr, nullptr);
    std::fclose(pem);
    std::fclose(key);
    ::chmod(Key(name).c_str(), 0600);
  }

  static void Free(Issued& issued) {
    X509_free(issued.cert);
    EVP_PKEY_free(issued.key);
    issued = {};
  }

  std::string dir_;
  long serial_ = 0;
};

}  // namespace muster::testing
