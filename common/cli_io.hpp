// Command-line plumbing shared by every executable (topocoll, topocoll-bench): sizes with
// suffixes, nccl-tests size sweeps, and the -o output file.
#pragma once

#include <chrono>
#include <cstdint>
#include <fstream>
#include <ostream>
#include <string>
#include <vector>

namespace topocoll::cli {

// "8", "64K", "1M", "1G" (powers of 1024) -> value; InputError naming the flag otherwise.
std::uint64_t parse_size(const std::string& text, const char* flag);

// The sweep's limits: sizes (-b, -e) up to 1 TiB; at most 4096 points; a factor that reaches -e
// within 65536 multiplications (a factor one ulp above 1 never does).
inline constexpr std::uint64_t kMaxSweepBytes = std::uint64_t{1} << 40;
inline constexpr std::size_t kMaxSweepPoints = 4096;
inline constexpr std::size_t kMaxSweepSteps = 65536;

// nccl-tests' sweep: from -b to -e, times -f, in whole elements of `elem` bytes. InputError when
// -b > -e, -f <= 1, a size is above kMaxSweepBytes, the sweep has more than kMaxSweepPoints
// points or the factor does not advance it (kMaxSweepSteps).
std::vector<std::uint64_t> size_sweep(const std::string& min_bytes, const std::string& max_bytes,
                                      const std::string& factor, std::size_t elem);

// nccl-tests' sweep with -i (stepbytes): from -b to -e in increments of `step_bytes`, in whole
// elements. InputError on the limits above, -b > -e or an increment of 0.
std::vector<std::uint64_t> linear_sweep(const std::string& min_bytes, const std::string& max_bytes,
                                        const std::string& step_bytes, std::size_t elem);

// A progress timeout in seconds (a flag's or a spec key's value, named by `flag`): > 0 and at
// most kMaxTimeoutSeconds (a week), else InputError; never an undefined conversion (inf, 1e300).
inline constexpr double kMaxTimeoutSeconds = 7 * 24 * 3600.0;
std::chrono::milliseconds timeout_ms(double seconds, const char* flag);

// An error message as the command line prints it: on one line, control characters of the input
// it echoes written as escapes (\n, \t, \xNN).
std::string one_line(const std::string& message);

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
