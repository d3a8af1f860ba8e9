#include "tests/kube-sim/pki.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>

namespace perfgate::kubesim {
namespace {

struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct X509Free {
  void operator()(X509* p) const { X509_free(p); }
};
struct BioFree {
  void operator()(BIO* p) const { BIO_free(p); }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using BioPtr = std::unique_ptr<BIO, BioFree>;

PkeyPtr NewEcKey() { return PkeyPtr(EVP_EC_gen("P-256")); }

std::string BioToString(BIO* bio) {
  char* data = nullptr;
  long len = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<size_t>(len));
}

bool AddExt(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (ext == nullptr) return false;
  bool ok = X509_add_ext(cert, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return ok;
}

X509Ptr MakeCert(EVP_PKEY* key, const char* cn, X509* issuer, EVP_PKEY* issuerKey, long serial) {
  X509Ptr cert(X509_new());
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 24L * 3600);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn),
                             -1, -1, 0);
  X509* iss = issuer != nullptr ? issuer : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(iss));
  if (issuer == nullptr) {
    AddExt(cert.get(), iss, NID_basic_constraints, "critical,CA:TRUE");
    AddExt(cert.get(), iss, NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature");
    AddExt(cert.get(), iss, NID_subject_key_identifier, "hash");
  } else {
    AddExt(cert.get(), iss, NID_basic_constraints, "critical,CA:FALSE");
    AddExt(cert.get(), iss, NID_key_usage, "critical,digitalSignature,keyEncipherment");
    AddExt(cert.get(), iss, NID_ext_key_usage, "serverAuth");
    AddExt(cert.get(), iss, NID_subject_alt_name, "IP:127.0.0.1,IP:::1,DNS:localhost");
  }
  if (X509_sign(cert.get(), issuerKey, EVP_sha256()) == 0) return nullptr;
  return cert;
}

std::string CertPem(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_X509(bio.get(), cert);
  return BioToString(bio.get());
}

std::string HmacSha256(std::string_view data, std::string_view key) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len);
  return std::string(reinterpret_cast<char*>(out), len);
}

}  // namespace

Result<Pki> GeneratePki() {
  PkeyPtr caKey = NewEcKey();
  PkeyPtr serverKey = NewEcKey();
  if (!caKey || !serverKey) return Internal("kube-sim: EC key generation failed");
  X509Ptr ca = MakeCert(caKey.get(), "kube-sim-ca", nullptr, caKey.get(), 1);
  if (!ca) return Internal("kube-sim: CA self-signing failed");
  X509Ptr server = MakeCert(serverKey.get(), "kube-apiserver", ca.get(), caKey.get(), 2);
  if (!server) return Internal("kube-sim: server certificate signing failed");
  Pki pki;
  pki.caCertPem = CertPem(ca.get());
  pki.serverCertPem = CertPem(server.get());
  BioPtr bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_PrivateKey(bio.get(), serverKey.get(), nullptr, nullptr, 0, nullptr, nullptr);
  pki.serverKeyPem = BioToString(bio.get());
  return pki;
}

std::string Base64Encode(std::string_view data) {
  std::string out(4 * ((data.size() + 2) / 3), '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(data.data()),
                          static_cast<int>(data.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::string Base64UrlEncode(std::string_view data) {
  std::string s = Base64Encode(data);
  while (!s.empty() && s.back() == '=') s.pop_back();
  for (char& c : s) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  return s;
}

Result<std::string> Base64Decode(std::string_view text) {
  std::string s(text);
  for (char& c : s) {
    if (c == '-') c = '+';
    if (c == '_') c = '/';
  }
  while (s.size() % 4 != 0) s.push_back('=');
  std::string out(3 * s.size() / 4 + 1, '\0');
  int n =
      EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                      reinterpret_cast<const unsigned char*>(s.data()), static_cast<int>(s.size()));
  if (n < 0) return InvalidArgument("invalid base64");
  size_t pad = 0;
  for (size_t i = s.size(); i > 0 && s[i - 1] == '='; --i) ++pad;
  out.resize(static_cast<size_t>(n) - pad);
  return out;
}

std::string SignJwt(std::string_view payloadJson, std::string_view key) {
  std::string signingInput =
      Base64UrlEncode(R"({"alg":"HS256","typ":"JWT"})") + "." + Base64UrlEncode(payloadJson);
  return signingInput + "." + Base64UrlEncode(HmacSha256(signingInput, key));
}

Result<std::string> VerifyJwt(std::string_view token, std::string_view key) {
  size_t dot1 = token.find('.');
  size_t dot2 = token.rfind('.');
  if (dot1 == std::string_view::npos || dot2 == dot1) return InvalidArgument("not a JWT");
  std::string expected = Base64UrlEncode(HmacSha256(token.substr(0, dot2), key));
  std::string_view got = token.substr(dot2 + 1);
  if (expected.size() != got.size() ||
      CRYPTO_memcmp(expected.data(), got.data(), got.size()) != 0) {
    return InvalidArgument("invalid signature");
  }
  return Base64Decode(token.substr(dot1 + 1, dot2 - dot1 - 1));
}

std::string RandomHex(int bytes) {
  std::string raw(static_cast<size_t>(bytes), '\0');
  RAND_bytes(reinterpret_cast<unsigned char*>(raw.data()), bytes);
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : raw) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}

}  // namespace perfgate::kubesim
