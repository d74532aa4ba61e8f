// Incremental SHA-256 (OpenSSL EVP) for verifying downloaded blobs against the hub's ETag.
//
// Not thread-safe: one hasher per download. Copying is disabled (it owns an EVP context).
#pragma once

#include <cstddef>
#include <string>

namespace ignis::hub {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void reset();
  void update(const void* data, size_t n);
  std::string hex_digest();  // finishes; call reset() before reusing

 private:
  void* ctx_;  // EVP_MD_CTX*
};

// SHA-256 of a file's content as 64 lower-case hex digits; throws ignis::Error when unreadable.
std::string sha256_file(const std::string& path);

// True for 64 lower-case hex digits (the form of an LFS file's ETag).
bool is_sha256_hex(const std::string& s);

}  // namespace ignis::hub
