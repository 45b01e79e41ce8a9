// Where a record comes from: the spec's hash, the checkout's `git describe`, the version and
// the machine (docs/experiments.md, "Provenance").
#pragma once

#include <string>

#include "common/records.hpp"
#include "experiments/runner/spec.hpp"

namespace topocoll::experiments {

// SHA-256 (FIPS 180-4) of a byte string, lower-case hex; OpenSSL's libcrypto computes it.
std::string sha256_hex(const std::string& bytes);

// `git describe --always --dirty` of the checkout holding `dir`; "unknown" outside one.
std::string git_commit(const std::string& dir);

// Sets a record's provenance fields for spec `s`: version, machine, experiment, spec_hash
// ("sha256:<hex>"), commit.
void add_provenance(records::Record& r, const ExpSpec& s, const std::string& commit);
// A record with only the provenance fields set.
records::Record provenance(const ExpSpec& s, const std::string& commit);

}  // namespace topocoll::experiments
