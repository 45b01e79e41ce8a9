// Progress of a long command on stderr: a bar on a terminal, else a line every few seconds;
// nothing when quiet, and nothing at all for a run that ends before `delay` (a quick command
// writes nothing to stderr but its own messages).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace topocoll::cli {

class Progress {
 public:
  // `what` prefixes each line ("exp", "sim"); `unit` names the counted things ("points").
  Progress(std::string what, std::string unit, std::size_t total, std::size_t done, bool quiet,
           std::chrono::milliseconds delay = std::chrono::milliseconds(0));
  // The clock starts here (and, without a delay and off a terminal, the first line).
  void start();
  void add(std::size_t n);
  // Nothing done since the last call, but `doing` runs (a long point): the bar redrawn, or a line
  // when one is due (every TOPOCOLL_PROGRESS_EVERY seconds off a terminal), each naming it.
  void tick(const std::string& doing);
  // Ends the bar's line (a terminal); call once at the end.
  void finish();
  double elapsed() const;

 private:
  int decile() const;
  std::string stats() const;
  void bar();
  void line();
  bool shown(std::chrono::steady_clock::time_point now) const { return now - start_ >= delay_; }

  std::string what_, unit_;
  std::size_t total_, done_, start_done_;
  bool quiet_, tty_;
  std::chrono::milliseconds delay_;
  std::chrono::milliseconds every_;  // between lines off a terminal (progress_every)
  std::chrono::steady_clock::time_point start_, last_line_;
  std::string doing_;  // tick()'s, until the next add()
  int last_decile_ = -1;
  bool drew_bar_ = false;
};

// How long a command runs before it shows progress: TOPOCOLL_PROGRESS_AFTER (seconds, a
// non-negative number) when set and valid, else 5 s.
std::chrono::milliseconds progress_delay();
// How often a line is written off a terminal: TOPOCOLL_PROGRESS_EVERY (seconds, a positive
// number) when set and valid, else 10 s.
std::chrono::milliseconds progress_every();

}  // namespace topocoll::cli
