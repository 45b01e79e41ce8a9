// The NCCL tuner table (TOPOCOLL_TUNER_TABLE, read by libnccl-tuner-topocoll.so inside NCCL's
// process): parse_table never throws, and a table it accepts is written back by format_table to
// the same rows.
#include <cstdio>
#include <cstdlib>

#include "fuzz/harness.hpp"
#include "plugins/nccl_tuner/tuner_table.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return topocoll::fuzz::guarded([&] {
    namespace tt = topocoll::tuner;
    const tt::ParseResult r = tt::parse_table(topocoll::fuzz::as_text(data, size));
    if (!r.ok()) return;
    const tt::ParseResult back = tt::parse_table(tt::format_table(r.rows, {}));
    if (!back.ok() || back.rows != r.rows) {
      std::fprintf(stderr, "FINDING: format_table(parse_table(x)) does not parse back to the same rows\n");
      std::abort();
    }
  });
}
