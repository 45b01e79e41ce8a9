#include "runtime/faults.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>

#include "common/errors.hpp"
#include "common/log.hpp"

namespace topocoll::runtime {

namespace {

constexpr std::size_t kHostBytes = 64;  // host names beyond this are cut (compared as cut)

std::string this_host() {
  char buf[kHostBytes + 1] = {};
  if (gethostname(buf, kHostBytes) != 0) return "?";
  return buf;
}

}  // namespace

PeerTable PeerTable::gather(MPI_Comm comm) {
  PeerTable t;
  int size = 1;
  MPI_Comm_rank(comm, &t.rank_);
  MPI_Comm_size(comm, &size);
  struct Entry {
    std::int64_t pid;
    char host[kHostBytes];
  };
  Entry mine{};
  mine.pid = static_cast<std::int64_t>(getpid());
  const std::string host = this_host();
  std::memcpy(mine.host, host.data(), std::min(host.size(), kHostBytes - 1));
  std::vector<Entry> all(static_cast<std::size_t>(size));
  MPI_Allgather(&mine, sizeof(Entry), MPI_BYTE, all.data(), sizeof(Entry), MPI_BYTE, comm);
  for (const Entry& e : all) {
    t.pids_.push_back(e.pid);
    t.hosts_.emplace_back(e.host, strnlen(e.host, kHostBytes));
  }
  return t;
}

std::vector<int> PeerTable::gone() const {
  std::vector<int> out;
  if (pids_.empty()) return out;
  const std::string& here = hosts_[static_cast<std::size_t>(rank_)];
  for (int r = 0; r < size(); ++r) {
    const auto i = static_cast<std::size_t>(r);
    if (r == rank_ || hosts_[i] != here) continue;
    // Signal 0 checks existence only. ESRCH: no such process (a zombie still counts as existing
    // until mpirun reaps it, which it does at once).
    if (kill(static_cast<pid_t>(pids_[i]), 0) != 0 && errno == ESRCH) out.push_back(r);
  }
  return out;
}

std::string PeerTable::describe_gone() const {
  std::string out;
  for (int r : gone()) {
    const auto i = static_cast<std::size_t>(r);
    if (!out.empty()) out += "; ";
    out += fmt::format("rank {} (pid {} on {}) is no longer running", r, pids_[i], hosts_[i]);
  }
  return out;
}

void wait_bounded(MPI_Request& request, std::chrono::milliseconds timeout, const std::string& what,
                  const PeerTable* peers, const std::function<void()>& progress) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (progress) progress();
    int done = 0;
    if (int rc = MPI_Test(&request, &done, MPI_STATUS_IGNORE); rc != MPI_SUCCESS) {
      char msg[MPI_MAX_ERROR_STRING] = {};
      int len = 0;
      MPI_Error_string(rc, msg, &len);
      throw JobTimeout(fmt::format("{} failed in MPI: {}", what, std::string(msg, static_cast<std::size_t>(len))));
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
  throw InputError(
      fmt::format("ranks disagree on the collective call: {}: expected every rank to pass the same collective, "
                  "count, type, op, root and algorithm",
                  list));
}

bool arm_test_kill(int rank) {
  const char* spec = std::getenv("TOPOCOLL_TEST_KILL");
  if (spec == nullptr || *spec == '\0') return false;
  int victim = -1;
  long ms = -1;
  if (std::sscanf(spec, "%d:%ld", &victim, &ms) != 2 || victim < 0 || ms < 0)
    throw InputError(fmt::format("TOPOCOLL_TEST_KILL='{}': expected RANK:MILLISECONDS, e.g. 1:500", spec));
  if (victim != rank) return false;
  TC_LOG_WARN("runtime", "rank {}: TOPOCOLL_TEST_KILL: killing this process in {} ms", rank, ms);
  std::thread([ms] {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    raise(SIGKILL);
  }).detach();
  return true;
}

}  // namespace topocoll::runtime
