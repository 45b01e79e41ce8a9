#include "runtime/faults.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <thread>

#include "common/log.hpp"

namespace topocoll::runtime {

namespace {

constexpr std::size_t kHostBytes = 64;   // host names beyond this are cut (compared as cut)
constexpr int kBoardMaxRanks = 1 << 16;  // a larger job has no board (only the pid checks)

std::string this_host() {
  char buf[kHostBytes + 1] = {};
  if (gethostname(buf, kHostBytes) != 0) return "?";
  return buf;
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// One rank's slot: written by that rank, read by the others of its host. Lock-free 64-bit atomics
// are address-free, so they work across processes.
struct alignas(64) Slot {
  std::atomic<std::int64_t> beat_ns;
  std::atomic<std::int32_t> state;
};

std::atomic<Slot*> own_slot{nullptr};

// The state letter of /proc/PID/stat (R, S, D, T, t, Z, ...), or 0 when there is no such process.
char proc_state(std::int64_t pid) {
  std::ifstream f(fmt::format("/proc/{}/stat", pid));
  std::string line;
  if (!f || !std::getline(f, line)) return 0;
  const std::size_t close = line.rfind(')');
  if (close == std::string::npos || close + 2 >= line.size()) return 0;
  return line[close + 2];
}

}  // namespace

// Mapped for the life of the process (never unmapped): the state a rank writes as it exits after
// an error (set_own_state) must land even when the PeerTable is gone by then.
struct PeerTable::Board {
  Slot* slots = nullptr;
  std::size_t bytes = 0;
};

void heartbeat() {
  if (Slot* s = own_slot.load(std::memory_order_relaxed)) s->beat_ns.store(now_ns(), std::memory_order_relaxed);
}

void set_own_state(PeerState st) {
  if (Slot* s = own_slot.load()) {
    s->beat_ns.store(now_ns());
    s->state.store(static_cast<std::int32_t>(st));
  }
}

PeerTable PeerTable::gather(MPI_Comm comm, std::chrono::milliseconds timeout) {
  PeerTable t;
  t.quiet_ = std::max<std::chrono::milliseconds>(timeout / 2, std::chrono::milliseconds(200));
  int size = 1;
  MPI_Comm_rank(comm, &t.rank_);
  MPI_Comm_size(comm, &size);
  struct Entry {
    std::int64_t pid;
    std::int64_t nonce;  // rank 0's: names the job's board
    char host[kHostBytes];
  };
  Entry mine{};
  mine.pid = static_cast<std::int64_t>(getpid());
  mine.nonce = std::chrono::system_clock::now().time_since_epoch().count();
  const std::string host = this_host();
  std::memcpy(mine.host, host.data(), std::min(host.size(), kHostBytes - 1));
  std::vector<Entry> all(static_cast<std::size_t>(size));
  MPI_Allgather(&mine, sizeof(Entry), MPI_BYTE, all.data(), sizeof(Entry), MPI_BYTE, comm);
  for (const Entry& e : all) {
    t.pids_.push_back(e.pid);
    t.hosts_.emplace_back(e.host, strnlen(e.host, kHostBytes));
  }
  if (size > kBoardMaxRanks) return t;
  // The board: one shared-memory object per host and job, opened by every rank of the host, then
  // unlinked once all have it (after the barrier), so nothing is left behind in /dev/shm.
  const std::string name = fmt::format("/topocoll-peers-{}-{}", all[0].pid, all[0].nonce);
  const std::size_t bytes = sizeof(Slot) * static_cast<std::size_t>(size);
  const int fd = shm_open(name.c_str(), O_CREAT | O_RDWR, 0600);
  if (fd >= 0) {
    void* p = ftruncate(fd, static_cast<off_t>(bytes)) == 0
                  ? mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                  : MAP_FAILED;
    close(fd);
    if (p != MAP_FAILED) {
      t.board_ = std::make_shared<Board>();
      t.board_->slots = static_cast<Slot*>(p);
      t.board_->bytes = bytes;
      Slot& s = t.board_->slots[t.rank_];
      s.beat_ns.store(now_ns());
      s.state.store(static_cast<std::int32_t>(PeerState::Active));
      own_slot.store(&s);
    }
  }
  MPI_Request r = MPI_REQUEST_NULL;
  MPI_Ibarrier(comm, &r);
  try {
    wait_bounded(r, timeout, fmt::format("rank {}: setting up the peer board", t.rank_), &t);
  } catch (...) {
    shm_unlink(name.c_str());
    throw;
  }
  shm_unlink(name.c_str());  // every rank of the host has it open: the first unlink removes the name
  return t;
}

std::vector<int> PeerTable::gone() const {
  std::vector<int> out;
  if (pids_.empty()) return out;
  const std::string& here = hosts_[static_cast<std::size_t>(rank_)];
  for (int r = 0; r < size(); ++r) {
    const auto i = static_cast<std::size_t>(r);
    if (r == rank_ || hosts_[i] != here) continue;
    const PeerState st = board_ ? static_cast<PeerState>(board_->slots[i].state.load()) : PeerState::Unknown;
    if (st == PeerState::Failed || st == PeerState::Done) continue;
    // Signal 0 checks existence only. ESRCH: no such process; a zombie (not yet reaped: ranks
    // started without a launcher) is gone too.
    if ((kill(static_cast<pid_t>(pids_[i]), 0) != 0 && errno == ESRCH) || proc_state(pids_[i]) == 'Z') out.push_back(r);
  }
  return out;
}

std::string PeerTable::describe_gone() const {
  std::vector<std::string> causes, left;
  if (pids_.empty()) return {};
  const std::string& here = hosts_[static_cast<std::size_t>(rank_)];
  const std::int64_t now = now_ns();
  for (int r = 0; r < size(); ++r) {
    const auto i = static_cast<std::size_t>(r);
    if (r == rank_ || hosts_[i] != here) continue;
    const std::string who = fmt::format("rank {} (pid {} on {})", r, pids_[i], hosts_[i]);
    const PeerState st = board_ ? static_cast<PeerState>(board_->slots[i].state.load()) : PeerState::Unknown;
    const bool exists = !(kill(static_cast<pid_t>(pids_[i]), 0) != 0 && errno == ESRCH);
    const char state = exists ? proc_state(pids_[i]) : 0;
    if (st == PeerState::Failed) {
      left.push_back(who + " already left after an error of its own");
    } else if (st == PeerState::Done) {
      left.push_back(who + " has finished");
    } else if (!exists || state == 'Z') {
      causes.push_back(who + " is no longer running (killed or crashed)");
    } else if (state == 'T' || state == 't') {
      causes.push_back(who + " is stopped (SIGSTOP, or held by a debugger)");
    } else if (board_) {
      const double idle_s = static_cast<double>(now - board_->slots[i].beat_ns.load()) * 1e-9;
      if (idle_s * 1000.0 >= static_cast<double>(quiet_.count()))
        causes.push_back(fmt::format("{} has not waited in topocoll for {:.1f} s (slowed, or blocked outside topocoll)",
                                     who, idle_s));
    }
  }
  std::string out;
  for (const auto* list : {&causes, &left})
    for (const std::string& c : *list) out += (out.empty() ? "" : "; ") + c;
  return out;
}

void wait_bounded(MPI_Request& request, std::chrono::milliseconds timeout, const std::string& what,
                  const PeerTable* peers, const std::function<void()>& progress) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    heartbeat();
    if (progress) progress();
    int done = 0;
    if (int rc = MPI_Test(&request, &done, MPI_STATUS_IGNORE); rc != MPI_SUCCESS) {
      char msg[MPI_MAX_ERROR_STRING] = {};
      int len = 0;
      MPI_Error_string(rc, msg, &len);
      std::string gone = peers ? peers->describe_gone() : std::string();
      throw JobTimeout(fmt::format("{} failed in MPI: {}{}", what, std::string(msg, static_cast<std::size_t>(len)),
                                   gone.empty() ? std::string() : ": " + gone));
    }
    if (done) return;
    if (std::chrono::steady_clock::now() >= deadline) {
      std::string gone = peers ? peers->describe_gone() : std::string();
      throw JobTimeout(fmt::format("{}: no progress for {} ms{}", what, timeout.count(),
                                   gone.empty() ? std::string() : ": " + gone));
    }
    std::this_thread::yield();
  }
}

namespace {

std::uint64_t fnv1a(const std::string& s, std::uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// Values this long travel as their length and digest (compared as such, shown as such).
constexpr std::size_t kAgreeValueBytes = 4096;

std::string rank_list(const std::vector<int>& ranks) {
  std::string rs;
  for (std::size_t i = 0; i < ranks.size() && i < 8; ++i) rs += (i ? "," : "") + std::to_string(ranks[i]);
  if (ranks.size() > 8) rs += fmt::format(",... ({} ranks)", ranks.size());
  return rs;
}

std::string shown(const std::string& v) {
  if (v.empty()) return "(none)";
  return v.size() <= 160 ? v : v.substr(0, 150) + fmt::format("... ({} characters)", v.size());
}

// Groups equal values in rank order of first appearance: "ranks 0,2: A; ranks 1: B".
std::string grouped(const std::vector<std::string>& values) {
  std::vector<std::pair<std::string, std::vector<int>>> groups;
  for (std::size_t r = 0; r < values.size(); ++r) {
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == values[r]; });
    if (it == groups.end())
      groups.push_back({values[r], {static_cast<int>(r)}});
    else
      it->second.push_back(static_cast<int>(r));
  }
  std::string out;
  for (const auto& [v, ranks] : groups)
    out += fmt::format("{}{} {}: {}", out.empty() ? "" : "; ", ranks.size() == 1 ? "rank" : "ranks", rank_list(ranks),
                       shown(v));
  return out;
}

}  // namespace

void agree(MPI_Comm comm, const Agreement& mine, const std::string& what, std::chrono::milliseconds timeout,
           const PeerTable* peers) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  // This rank's text: the error, or the fields as name NUL value NUL ...
  std::string text;
  if (!mine.input_error.empty()) {
    text = mine.input_error;
  } else {
    for (const auto& [name, value] : mine.fields) {
      text += name;
      text += '\0';
      text += value.size() <= kAgreeValueBytes
                  ? value
                  : fmt::format("({} characters, digest {:016x})", value.size(), fnv1a(value));
      text += '\0';
    }
  }
  if (text.size() > static_cast<std::size_t>(INT_MAX / std::max(size, 1)))
    throw InputError(fmt::format("{}: {} bytes to agree on: expected fewer", what, text.size()));
  struct Header {
    std::int32_t error, bytes;
    std::uint64_t digest;
  };
  const Header h{mine.input_error.empty() ? 0 : 1, static_cast<std::int32_t>(text.size()), fnv1a(text)};
  std::vector<Header> all(static_cast<std::size_t>(size));
  const std::string waiting = fmt::format("rank {}: agreeing on {} with the other ranks", rank, what);
  MPI_Request req = MPI_REQUEST_NULL;
  MPI_Iallgather(&h, sizeof h, MPI_BYTE, all.data(), sizeof h, MPI_BYTE, comm, &req);
  wait_bounded(req, timeout, waiting, peers);
  const bool same = std::all_of(all.begin(), all.end(), [&](const Header& o) {
    return o.error == 0 && o.digest == all[0].digest && o.bytes == all[0].bytes;
  });
  if (same) return;

  // Something differs: every rank gathers every text and words the same error from them.
  std::vector<int> counts(static_cast<std::size_t>(size)), displs(static_cast<std::size_t>(size));
  int total = 0;
  for (int r = 0; r < size; ++r) {
    counts[static_cast<std::size_t>(r)] = all[static_cast<std::size_t>(r)].bytes;
    displs[static_cast<std::size_t>(r)] = total;
    total += all[static_cast<std::size_t>(r)].bytes;
  }
  std::string texts(static_cast<std::size_t>(total), '\0');
  MPI_Iallgatherv(text.data(), static_cast<int>(text.size()), MPI_CHAR, texts.data(), counts.data(), displs.data(),
                  MPI_CHAR, comm, &req);
  wait_bounded(req, timeout, waiting, peers);
  auto text_of = [&](int r) {
    return texts.substr(static_cast<std::size_t>(displs[static_cast<std::size_t>(r)]),
                        static_cast<std::size_t>(counts[static_cast<std::size_t>(r)]));
  };

  std::vector<int> bad;
  std::vector<std::string> errors;
  for (int r = 0; r < size; ++r)
    if (all[static_cast<std::size_t>(r)].error) {
      bad.push_back(r);
      errors.push_back(text_of(r));
    }
  if (!bad.empty()) {
    const bool one = std::all_of(errors.begin(), errors.end(), [&](const std::string& e) { return e == errors[0]; });
    if (one && static_cast<int>(bad.size()) == size) throw AgreedInputError(errors[0]);
    const std::string where = fmt::format("{} {} (of {}{})", bad.size() == 1 ? "rank" : "ranks", rank_list(bad), size,
                                          static_cast<int>(bad.size()) == size ? "" : "; the others' input was valid");
    if (one) throw AgreedInputError(fmt::format("input error on {}: {}", where, errors[0]));
    std::string list;
    for (std::size_t i = 0; i < bad.size() && i < 4; ++i)
      list += fmt::format("{}rank {}: {}", i ? "; " : "", bad[i], errors[i]);
    throw AgreedInputError(fmt::format("input errors on {}: {}", where, list));
  }

  // Every rank's fields, parsed back; the first field that differs is named with every value.
  std::vector<std::vector<std::pair<std::string, std::string>>> fields(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) {
    const std::string t = text_of(r);
    std::size_t at = 0;
    while (at < t.size()) {
      const std::size_t n = t.find('\0', at);
      const std::size_t v = n == std::string::npos ? t.size() : t.find('\0', n + 1);
      if (n == std::string::npos || v == std::string::npos) break;
      fields[static_cast<std::size_t>(r)].push_back({t.substr(at, n - at), t.substr(n + 1, v - n - 1)});
      at = v + 1;
    }
  }
  std::vector<std::string> differ;
  std::string first;
  std::size_t most = 0;
  for (const auto& f : fields) most = std::max(most, f.size());
  for (std::size_t i = 0; i < most; ++i) {
    std::vector<std::string> names, values;
    for (const auto& f : fields) {
      names.push_back(i < f.size() ? f[i].first : "(missing)");
      values.push_back(i < f.size() ? f[i].second : "(missing)");
    }
    const bool names_same = std::all_of(names.begin(), names.end(), [&](const auto& n) { return n == names[0]; });
    const bool values_same = std::all_of(values.begin(), values.end(), [&](const auto& v) { return v == values[0]; });
    if (names_same && values_same) continue;
    differ.push_back(names[0]);
    if (first.empty())
      first = names_same ? fmt::format("{}: {}", names[0], grouped(values))
                         : fmt::format("the fields themselves (field {}): {}", i, grouped(names));
  }
  if (first.empty()) first = "their digests";  // (only when a value's text hides a difference)
  std::string also;
  for (std::size_t i = 1; i < differ.size() && i < 6; ++i) also += (i > 1 ? ", " : "") + differ[i];
  if (differ.size() > 6) also += ", ...";
  throw AgreedInputError(fmt::format("ranks disagree on {}: {}: expected the same on every rank{}", what, first,
                                     also.empty() ? std::string() : " (also different: " + also + ")"));
}

std::string describe(const CallSignature& s) {
  const algo::CollectiveArgs& a = s.args;
  std::string out = fmt::format("{} {} {} {} {}", algo::to_string(a.collective), a.count, algo::to_string(a.dtype),
                                algo::to_string(a.op), s.algorithm);
  if (a.collective == algo::Collective::Broadcast || a.collective == algo::Collective::Reduce)
    out += fmt::format(" root {}", a.root);
  if (s.channels > 0) out += fmt::format(" ({} channels, {} B slices)", s.channels, s.slice_bytes);
  return out;
}

void check_same_call(MPI_Comm comm, const CallSignature& mine, std::chrono::milliseconds timeout,
                     const PeerTable* peers, const std::function<void()>& progress) {
  // A fixed-size image of the signature; the algorithm name is compared up to 63 characters.
  struct Image {
    std::uint64_t count, slice_bytes;
    std::int32_t collective, dtype, op, ranks, root, channels;
    char algorithm[64];
  };
  Image img{};
  img.count = mine.args.count;
  img.slice_bytes = mine.slice_bytes;
  img.collective = static_cast<std::int32_t>(mine.args.collective);
  img.dtype = static_cast<std::int32_t>(mine.args.dtype);
  img.op = static_cast<std::int32_t>(mine.args.op);
  img.ranks = mine.args.ranks;
  img.root = mine.args.root;
  img.channels = mine.channels;
  std::memcpy(img.algorithm, mine.algorithm.data(),
              std::min<std::size_t>(mine.algorithm.size(), sizeof img.algorithm - 1));

  int size = 1;
  MPI_Comm_size(comm, &size);
  std::vector<Image> all(static_cast<std::size_t>(size));
  MPI_Request req = MPI_REQUEST_NULL;
  MPI_Iallgather(&img, sizeof(Image), MPI_BYTE, all.data(), sizeof(Image), MPI_BYTE, comm, &req);
  wait_bounded(req, timeout, fmt::format("checking the call ({}) with the other ranks", describe(mine)), peers,
               progress);

  // Group the ranks by signature, in rank order of first appearance.
  std::vector<std::pair<std::string, std::vector<int>>> groups;
  for (int r = 0; r < size; ++r) {
    const Image& m = all[static_cast<std::size_t>(r)];
    CallSignature s;
    s.args.collective = static_cast<algo::Collective>(m.collective);
    s.args.count = m.count;
    s.args.dtype = static_cast<algo::DataType>(m.dtype);
    s.args.op = static_cast<algo::ReduceOp>(m.op);
    s.args.ranks = m.ranks;
    s.args.root = m.root;
    s.algorithm = std::string(m.algorithm, strnlen(m.algorithm, sizeof m.algorithm));
    s.channels = m.channels;
    s.slice_bytes = m.slice_bytes;
    const std::string d = describe(s);
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == d; });
    if (it == groups.end())
      groups.push_back({d, {r}});
    else
      it->second.push_back(r);
  }
  if (groups.size() == 1) return;
  std::string list;
  for (const auto& [d, ranks] : groups) {
    std::string rs;
    for (std::size_t i = 0; i < ranks.size() && i < 8; ++i) rs += (i ? "," : "") + std::to_string(ranks[i]);
    if (ranks.size() > 8) rs += fmt::format(",... ({} ranks)", ranks.size());
    list += fmt::format("{}ranks {}: {}", list.empty() ? "" : "; ", rs, d);
  }
  throw AgreedInputError(
      fmt::format("ranks disagree on the collective call: {}: expected every rank to pass the same collective, "
                  "count, type, op, root and algorithm",
                  list));
}

namespace {

std::atomic<long> stall_ms{0};

void stall_handler(int) {
  // Async-signal-safe: nanosleep only, resumed after interruptions.
  const long ms = stall_ms.load();
  timespec left{ms / 1000, (ms % 1000) * 1000000};
  while (nanosleep(&left, &left) != 0 && errno == EINTR) {
  }
}

void say_fault(int rank, const char* what) {
  const double epoch = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::fprintf(stderr, "topocoll test fault: rank %d: %s at %.3f\n", rank, what, epoch);
  std::fflush(stderr);
}

}  // namespace

bool arm_test_faults(int rank) {
  bool armed = false;
  if (const char* spec = std::getenv("TOPOCOLL_TEST_KILL"); spec != nullptr && *spec != '\0') {
    int victim = -1;
    long ms = -1;
    char how[16] = {};
    const int n = std::sscanf(spec, "%d:%ld:%15s", &victim, &ms, how);
    const std::string kind = n == 3 ? how : "KILL";
    if (n < 2 || victim < 0 || ms < 0 || (kind != "KILL" && kind != "STOP"))
      throw InputError(
          fmt::format("TOPOCOLL_TEST_KILL='{}': expected RANK:MILLISECONDS[:KILL|STOP], e.g. 1:500", spec));
    if (victim == rank) {
      TC_LOG_WARN("runtime", "rank {}: TOPOCOLL_TEST_KILL: SIG{} to this process in {} ms", rank, kind, ms);
      std::thread([ms, rank, kind] {
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
        say_fault(rank, kind == "STOP" ? "SIGSTOP" : "SIGKILL");
        raise(kind == "STOP" ? SIGSTOP : SIGKILL);
      }).detach();
      armed = true;
    }
  }
  if (const char* spec = std::getenv("TOPOCOLL_TEST_STALL"); spec != nullptr && *spec != '\0') {
    int victim = -1;
    long ms = -1, for_ms = -1;
    if (std::sscanf(spec, "%d:%ld:%ld", &victim, &ms, &for_ms) != 3 || victim < 0 || ms < 0 || for_ms < 0)
      throw InputError(fmt::format("TOPOCOLL_TEST_STALL='{}': expected RANK:MILLISECONDS:FOR_MILLISECONDS", spec));
    if (victim == rank) {
      TC_LOG_WARN("runtime", "rank {}: TOPOCOLL_TEST_STALL: the main thread sleeps {} ms in {} ms", rank, for_ms, ms);
      stall_ms.store(for_ms);
      struct sigaction sa {};
      sa.sa_handler = stall_handler;
      sa.sa_flags = SA_RESTART;
      sigemptyset(&sa.sa_mask);
      sigaction(SIGUSR2, &sa, nullptr);
      const pthread_t main_thread = pthread_self();
      std::thread([ms, rank, main_thread] {
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
        say_fault(rank, "stall");
        pthread_kill(main_thread, SIGUSR2);
      }).detach();
      armed = true;
    }
  }
  return armed;
}

}  // namespace topocoll::runtime
