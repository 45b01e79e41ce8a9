#include "experiments/runner/provenance.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "experiments/runner/process.hpp"
#include "experiments/runner/test_support.hpp"

using namespace topocoll;

TEST_CASE("provenance: SHA-256, the FIPS 180-2 test vectors") {
  CHECK(experiments::sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(experiments::sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(experiments::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(experiments::sha256_hex(std::string(1000000, 'a')) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("provenance: the subprocess helper and git describe") {
  const experiments::ProcessResult ok = experiments::run_process({"sh", "-c", "echo out; echo err >&2"});
  CHECK(ok.status == 0);
  CHECK(ok.out == "out\n");
  CHECK(experiments::run_process({"sh", "-c", "exit 3"}).status == 3);
  CHECK(experiments::run_process({"topocoll-no-such-program"}).status == 127);

  experiments::testing::TempDir d;
  const std::string log = d.path() + "/log";
  const experiments::ProcessResult logged = experiments::run_process({"sh", "-c", "echo out; echo err >&2"}, log);
  CHECK(logged.status == 0);
  CHECK(logged.out.empty());
  std::ifstream in(log);
  std::string a, b;
  std::getline(in, a);
  std::getline(in, b);
  CHECK(a == "out");
  CHECK(b == "err");

  CHECK(experiments::git_commit(d.path()) == "unknown");  // not a checkout
  if (std::filesystem::exists(TOPOCOLL_SOURCE_DIR "/.git"))
    CHECK(experiments::git_commit(TOPOCOLL_SOURCE_DIR) != "unknown");
}

TEST_CASE("provenance: the record fields") {
  experiments::ExpSpec s;
  s.name = "tiny";
  s.sha256 = "00ff";
  const records::Record r = experiments::provenance(s, "v1-2-gabc");
  CHECK(r.experiment == "tiny");
  CHECK(r.spec_hash == "sha256:00ff");
  CHECK(r.commit == "v1-2-gabc");
  CHECK(r.version == TOPOCOLL_VERSION);
  CHECK(r.machine == records::hostname());
}
