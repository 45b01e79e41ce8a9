// Command-line plumbing shared by every executable (topocoll, topocoll-bench): sizes with
// suffixes, nccl-tests size sweeps, and the -o output file.
#pragma once

#include <cstdint>
#include <fstream>
#include <ostream>
#include <string>
#include <vector>

namespace topocoll::cli {

// "8", "64K", "1M", "1G" (powers of 1024) -> value; InputError naming the flag otherwise.
std::uint64_t parse_size(const std::string& text, const char* flag);

// nccl-tests' sweep: from -b to -e, times -f, in whole elements of `elem` bytes. InputError when
// -b > -e, -f <= 1 or the sweep has more than 4096 points.
std::vector<std::uint64_t> size_sweep(const std::string& min_bytes, const std::string& max_bytes,
                                      const std::string& factor, std::size_t elem);

// Where a command writes: the file named by `flag` (none or "-": the given stream). Errors on
// open and on close name the flag and the file.
class Output {
 public:
  Output(const std::string& path, std::ostream& fallback, const char* flag = "-o");
  std::ostream& stream() { return file_.is_open() ? file_ : fallback_; }
  void close();  // flushes and reports a failed write

 private:
  std::string path_;
  std::string flag_;
  std::ofstream file_;
  std::ostream& fallback_;
};

}  // namespace topocoll::cli
