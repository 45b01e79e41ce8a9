#include "common/cli_io.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <tuple>

#include "common/errors.hpp"

namespace topocoll::cli {

std::uint64_t parse_size(const std::string& text, const char* flag) {
  std::size_t used = 0;
  unsigned long long v = 0;
  try {
    if (text.empty() || text[0] == '-' || text[0] == '+') throw std::invalid_argument("sign");
    v = std::stoull(text, &used);
  } catch (const std::exception&) {
    throw InputError(fmt::format("{} {}: expected a non-negative size such as 8, 64K, 1M or 1G", flag, text));
  }
  const std::string suffix = text.substr(used);
  std::uint64_t mult = 1;
  if (suffix == "K" || suffix == "k")
    mult = 1ull << 10;
  else if (suffix == "M" || suffix == "m")
    mult = 1ull << 20;
  else if (suffix == "G" || suffix == "g")
    mult = 1ull << 30;
  else if (!suffix.empty())
    throw InputError(fmt::format("{} {}: unknown suffix '{}': expected K, M or G", flag, text, suffix));
  if (v > (~0ull) / mult) throw InputError(fmt::format("{} {}: too large", flag, text));
  return v * mult;
}

std::vector<std::uint64_t> size_sweep(const std::string& min_bytes, const std::string& max_bytes,
                                      const std::string& factor, std::size_t elem) {
  const std::uint64_t lo = parse_size(min_bytes, "-b"), hi = parse_size(max_bytes, "-e");
  for (const auto& [flag, text, v] : {std::tuple{"-b", &min_bytes, lo}, std::tuple{"-e", &max_bytes, hi}})
    if (v > kMaxSweepBytes)
      throw InputError(
          fmt::format("{} {}: larger than the size limit kMaxSweepBytes = {} (1T)", flag, *text, kMaxSweepBytes));
  if (lo > hi) throw InputError(fmt::format("-b {} is larger than -e {}: expected min <= max", min_bytes, max_bytes));
  double f = 0.0;
  try {
    std::size_t used = 0;
    f = std::stod(factor, &used);
    if (used != factor.size()) throw std::invalid_argument("trailing");
  } catch (const std::exception&) {
    throw InputError(fmt::format("-f {}: expected a number > 1", factor));
  }
  if (!(f > 1.0)) throw InputError(fmt::format("-f {}: expected a number > 1", factor));
  std::vector<std::uint64_t> sizes;
  // Sizes stay below kMaxSweepBytes * (1 + 1e-12): every conversion to an integer is defined.
  const double start = static_cast<double>(std::max<std::uint64_t>(lo, elem));
  std::size_t steps = 0;
  for (double s = start; s <= static_cast<double>(hi) * (1 + 1e-12); s *= f) {
    const std::uint64_t bytes = static_cast<std::uint64_t>(s) / elem * elem;  // whole elements, as nccl-tests
    if (sizes.empty() || bytes != sizes.back()) sizes.push_back(bytes);
    if (sizes.size() > kMaxSweepPoints)
      throw InputError(fmt::format("the size sweep has more than {} points: raise -f", kMaxSweepPoints));
    // A factor must make the sweep grow: one that leaves the size as it is (1 + 1 ulp) or needs
    // more than kMaxSweepSteps multiplications to reach -e would never, or only after hours, end.
    if (s * f <= s || ++steps > kMaxSweepSteps)
      throw InputError(
          fmt::format("-f {}: does not advance the size sweep from {} bytes (the limit "
                      "kMaxSweepSteps = {} multiplications to reach -e {}): expected a larger factor",
                      factor, bytes, kMaxSweepSteps, max_bytes));
  }
  return sizes;
}

std::vector<std::uint64_t> linear_sweep(const std::string& min_bytes, const std::string& max_bytes,
                                        const std::string& step_bytes, std::size_t elem) {
  const std::uint64_t lo = parse_size(min_bytes, "-b"), hi = parse_size(max_bytes, "-e");
  const std::uint64_t step = parse_size(step_bytes, "-i");
  for (const auto& [flag, text, v] : {std::tuple{"-b", &min_bytes, lo}, std::tuple{"-e", &max_bytes, hi}})
    if (v > kMaxSweepBytes)
      throw InputError(
          fmt::format("{} {}: larger than the size limit kMaxSweepBytes = {} (1T)", flag, *text, kMaxSweepBytes));
  if (lo > hi) throw InputError(fmt::format("-b {} is larger than -e {}: expected min <= max", min_bytes, max_bytes));
  if (step == 0) throw InputError(fmt::format("-i {}: expected an increment of at least 1 byte", step_bytes));
  if ((hi - lo) / step + 1 > kMaxSweepPoints)
    throw InputError(fmt::format("-i {}: the size sweep from {} to {} has more than {} points: raise -i", step_bytes,
                                 lo, hi, kMaxSweepPoints));
  std::vector<std::uint64_t> sizes;
  // nccl-tests: size = size + stepbytes while size <= maxbytes; here in whole elements.
  for (std::uint64_t s = std::max<std::uint64_t>(lo, elem); s <= hi; s += step) {
    const std::uint64_t bytes = s / elem * elem;
    if (sizes.empty() || bytes != sizes.back()) sizes.push_back(bytes);
  }
  return sizes;
}

std::chrono::milliseconds timeout_ms(double seconds, const char* flag) {
  if (!(seconds > 0) || !(seconds <= kMaxTimeoutSeconds))
    throw InputError(
        fmt::format("{} {}: expected seconds > 0, at most kMaxTimeoutSeconds = {}", flag, seconds, kMaxTimeoutSeconds));
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000.0));
}

std::string one_line(const std::string& message) {
  std::string out;
  out.reserve(message.size());
  for (const char ch : message) {
    const auto u = static_cast<unsigned char>(ch);
    if (ch == '\n')
      out += "\\n";
    else if (ch == '\r')
      out += "\\r";
    else if (ch == '\t')
      out += "\\t";
    else if (u < 0x20 || u == 0x7f)
      out += fmt::format("\\x{:02x}", u);
    else
      out += ch;
  }
  return out;
}

Output::Output(const std::string& path, std::ostream& fallback, const char* flag)
    : path_(path), flag_(flag), fallback_(fallback) {
  if (path.empty() || path == "-") return;
  file_.open(path);
  if (!file_) throw InputError(fmt::format("{} {}: cannot open the file for writing", flag_, path));
}

void Output::close() {
  std::ostream& s = stream();
  s.flush();
  if (!s) throw InputError(fmt::format("{} {}: writing failed", flag_, path_.empty() ? "-" : path_));
  if (file_.is_open()) file_.close();
}

}  // namespace topocoll::cli
