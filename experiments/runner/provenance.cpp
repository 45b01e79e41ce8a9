#include "experiments/runner/provenance.hpp"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <memory>
#include <stdexcept>

#include "experiments/runner/process.hpp"

namespace topocoll::experiments {

std::string sha256_hex(const std::string& bytes) {
  const std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1 ||
      EVP_DigestUpdate(ctx.get(), bytes.data(), bytes.size()) != 1 || EVP_DigestFinal_ex(ctx.get(), md, &len) != 1)
    throw std::runtime_error("SHA-256: OpenSSL's EVP digest failed");
  std::string hex;
  hex.reserve(2 * len);
  for (unsigned int i = 0; i < len; ++i) hex += fmt::format("{:02x}", md[i]);
  return hex;
}

std::string git_commit(const std::string& dir) {
  ProcessResult r = run_process({"git", "-C", dir, "describe", "--always", "--dirty"});
  if (r.status != 0) return "unknown";
  while (!r.out.empty() && (r.out.back() == '\n' || r.out.back() == '\r')) r.out.pop_back();
  return r.out.empty() ? "unknown" : r.out;
}

void add_provenance(records::Record& r, const ExpSpec& s, const std::string& commit) {
  r.version = TOPOCOLL_VERSION;
  r.machine = records::hostname();
  r.experiment = s.name;
  r.spec_hash = "sha256:" + s.sha256;
  r.commit = commit;
}

records::Record provenance(const ExpSpec& s, const std::string& commit) {
  records::Record r;
  add_provenance(r, s, commit);
  return r;
}

}  // namespace topocoll::experiments
