#include "common/progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace topocoll::cli {

Progress::Progress(std::string what, std::string unit, std::size_t total, std::size_t done, bool quiet,
                   std::chrono::milliseconds delay)
    : what_(std::move(what)),
      unit_(std::move(unit)),
      total_(total),
      done_(done),
      start_done_(done),
      quiet_(quiet),
      tty_(isatty(2) == 1),
      delay_(delay),
      every_(progress_every()),
      start_(std::chrono::steady_clock::now()) {
  last_line_ = start_;
}

void Progress::start() {
  start_ = last_line_ = std::chrono::steady_clock::now();
  if (!quiet_ && !tty_ && delay_.count() == 0) line();
}

void Progress::add(std::size_t n) {
  done_ += n;
  doing_.clear();
  if (quiet_) return;
  const auto now = std::chrono::steady_clock::now();
  if (!shown(now)) return;
  if (tty_) {
    bar();
  } else if (done_ == total_ || now - last_line_ >= every_ || (delay_.count() == 0 && decile() != last_decile_) ||
             last_decile_ < 0) {
    line();
    last_line_ = now;
  }
}

void Progress::tick(const std::string& doing) {
  doing_ = doing;
  if (quiet_) return;
  const auto now = std::chrono::steady_clock::now();
  if (!shown(now)) return;
  if (tty_) {
    bar();
  } else if (now - last_line_ >= every_ || last_decile_ < 0) {
    line();
    last_line_ = now;
  }
}

void Progress::finish() {
  if (!quiet_ && tty_ && drew_bar_) std::fputc('\n', stderr);
}

double Progress::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

int Progress::decile() const {
  return total_ ? static_cast<int>(10 * done_ / total_) : 10;
}

std::string Progress::stats() const {
  const double t = elapsed();
  const double rate = t > 0 ? static_cast<double>(done_ - start_done_) / t : 0.0;
  std::string left = "--:--";
  if (rate > 0) {
    const long s = std::lround(static_cast<double>(total_ - done_) / rate);
    left = fmt::format("{}:{:02d}:{:02d}", s / 3600, (s / 60) % 60, s % 60);
  }
  return fmt::format("{}/{} {} ({:.0f}%), {:.1f} {}/s, {:.0f} s elapsed, time left {}{}", done_, total_, unit_,
                     total_ ? 100.0 * static_cast<double>(done_) / static_cast<double>(total_) : 100.0, rate, unit_, t,
                     left, doing_.empty() ? "" : "; running: " + doing_);
}

void Progress::bar() {
  constexpr int kWidth = 30;
  const int filled = total_ ? static_cast<int>(kWidth * done_ / total_) : kWidth;
  std::fprintf(stderr, "\r[%s%s] %s ", std::string(static_cast<std::size_t>(filled), '#').c_str(),
               std::string(static_cast<std::size_t>(kWidth - filled), '.').c_str(), stats().c_str());
  std::fflush(stderr);
  drew_bar_ = true;
}

void Progress::line() {
  last_decile_ = decile();
  std::fprintf(stderr, "%s: %s\n", what_.c_str(), stats().c_str());
  std::fflush(stderr);
}

namespace {

// Seconds from the environment variable `name` (a number in [least, 1e6), at least 1 ms), else
// `otherwise`.
std::chrono::milliseconds seconds_from_env(const char* name, double least, std::chrono::milliseconds otherwise) {
  if (const char* v = std::getenv(name)) {
    char* end = nullptr;
    const double s = std::strtod(v, &end);
    if (end != v && *end == '\0' && s >= least && s < 1e6)
      return std::chrono::milliseconds(least > 0 ? std::max(1LL, std::llround(s * 1000)) : std::llround(s * 1000));
  }
  return otherwise;
}

}  // namespace

std::chrono::milliseconds progress_delay() {
  return seconds_from_env("TOPOCOLL_PROGRESS_AFTER", 0.0, std::chrono::seconds(5));
}

std::chrono::milliseconds progress_every() {
  // A positive number: 0 would mean a line at every tick.
  return seconds_from_env("TOPOCOLL_PROGRESS_EVERY", 1e-3, std::chrono::seconds(10));
}

}  // namespace topocoll::cli
