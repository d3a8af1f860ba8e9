// Test PKI for kube-sim: a throw-away CA and a serving certificate for 127.0.0.1/localhost,
// generated in memory with OpenSSL, plus the HMAC-SHA256 JWT signing kube-sim uses for
// service-account tokens. Never meant to protect anything but a loopback test server.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"

namespace perfgate::kubesim {

struct Pki {
  std::string caCertPem;
  std::string serverCertPem;
  std::string serverKeyPem;
};

// Generates a fresh EC P-256 CA and a server certificate signed by it (SANs: IP 127.0.0.1,
// IP ::1, DNS localhost, valid for one day). Blocking, thread-safe.
Result<Pki> GeneratePki();

std::string Base64Encode(std::string_view data);
std::string Base64UrlEncode(std::string_view data);
// Accepts both the standard and the URL alphabet, with or without padding.
Result<std::string> Base64Decode(std::string_view text);

// HS256 JWT over `payloadJson` with `key`. Thread-safe.
std::string SignJwt(std::string_view payloadJson, std::string_view key);
// Returns the payload JSON when the signature over header.payload matches `key`.
Result<std::string> VerifyJwt(std::string_view token, std::string_view key);

std::string RandomHex(int bytes);

}  // namespace perfgate::kubesim
