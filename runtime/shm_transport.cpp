#include "runtime/shm_transport.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "common/errors.hpp"
#include "runtime/faults.hpp"

namespace topocoll::runtime {

// One (src, dst, channel) ring in the control segment. `posted` is written by the sender only,
// `acked` by the receiver only, each on its own cache line; the descriptors are written by the
// sender before the release store of `posted` that publishes them, and read by the receiver after
// its acquire load.
struct alignas(64) ShmTransport::Ring {
  alignas(64) std::uint64_t posted;
  alignas(64) std::uint64_t acked;
  alignas(64) Descriptor slots[kRingSlots];
};

// A rank's board (push): written by the rank, read by its peers. `run` is stored last (release)
// by begin_run, after the run's fingerprint and buffers; progress[c] = (run << 32) | ops completed
// on channel c, stored (release) as the executor completes them. Every field is accessed through
// std::atomic_ref.
struct alignas(64) ShmTransport::Board {
  alignas(64) std::uint64_t run;
  std::uint64_t fingerprint;
  std::uint64_t region[3];  // per buffer (input, output, scratch): its region, or kNoRegion
  std::uint64_t offset[3];  // its first byte in that region
  alignas(64) std::uint64_t progress[kChannels];
};

namespace {

constexpr std::uint64_t kNoRegion = UINT64_MAX;

static_assert(std::atomic_ref<std::uint64_t>::is_always_lock_free, "the ring's flags must be address-free");

std::uint64_t load(std::uint64_t& word) {
  return std::atomic_ref<std::uint64_t>(word).load(std::memory_order_acquire);
}
void store(std::uint64_t& word, std::uint64_t v) {
  std::atomic_ref<std::uint64_t>(word).store(v, std::memory_order_release);
}
std::uint64_t load_relaxed(std::uint64_t& word) {
  return std::atomic_ref<std::uint64_t>(word).load(std::memory_order_relaxed);
}
void store_relaxed(std::uint64_t& word, std::uint64_t v) {
  std::atomic_ref<std::uint64_t>(word).store(v, std::memory_order_relaxed);
}

std::string errno_text(int e) {
  return fmt::format("{} (errno {})", std::strerror(e), e);
}

// Creates a segment of `bytes` (its pages allocated, so a full /dev/shm is an error here and not
// a SIGBUS later) and maps it read-write. Empty on success, else what failed.
std::string create_segment(const std::string& name, std::size_t bytes, std::byte** base) {
  const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) return fmt::format("shm_open({}): {}", name, errno_text(errno));
  std::string error;
  if (const int e = posix_fallocate(fd, 0, static_cast<off_t>(bytes)); e != 0) {
    error = fmt::format("posix_fallocate({}, {} bytes): {}", name, bytes, errno_text(e));
  } else {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
      error = fmt::format("mmap({}, {} bytes): {}", name, bytes, errno_text(errno));
    else
      *base = static_cast<std::byte*>(p);
  }
  close(fd);
  if (!error.empty()) shm_unlink(name.c_str());
  return error;
}

std::string map_segment(const std::string& name, std::size_t bytes, int prot, std::byte** base) {
  const int fd = shm_open(name.c_str(), prot & PROT_WRITE ? O_RDWR : O_RDONLY, 0600);
  if (fd < 0) return fmt::format("shm_open({}): {}", name, errno_text(errno));
  void* p = mmap(nullptr, bytes, prot, MAP_SHARED, fd, 0);
  const int e = errno;
  close(fd);
  if (p == MAP_FAILED) return fmt::format("mmap({}, {} bytes): {}", name, bytes, errno_text(e));
  *base = static_cast<std::byte*>(p);
  return {};
}

}  // namespace

ShmTransport::ShmTransport(MPI_Comm comm, std::unique_ptr<Transport> remote, std::chrono::milliseconds timeout,
                           const PeerTable* peers)
    : timeout_(timeout), peers_(peers), remote_(std::move(remote)) {
  MPI_Comm_dup(comm, &comm_);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node_);
  MPI_Comm_rank(node_, &local_rank_);
  MPI_Comm_size(node_, &local_size_);
  // Who is on this node (their ranks and pids), and the node's segment names: the first local
  // rank's pid and a nonce.
  struct Entry {
    std::int64_t rank, pid, nonce;
  };
  const Entry mine{rank_, static_cast<std::int64_t>(getpid()),
                   static_cast<std::int64_t>(std::chrono::system_clock::now().time_since_epoch().count())};
  std::vector<Entry> all(static_cast<std::size_t>(local_size_));
  MPI_Allgather(&mine, sizeof(Entry), MPI_BYTE, all.data(), sizeof(Entry), MPI_BYTE, node_);
  local_of_.assign(static_cast<std::size_t>(size_), -1);
  for (int l = 0; l < local_size_; ++l) {
    local_of_[static_cast<std::size_t>(all[static_cast<std::size_t>(l)].rank)] = l;
    pid_of_.push_back(all[static_cast<std::size_t>(l)].pid);
  }
  if (!remote_ && local_size_ < size_)
    throw std::logic_error("ShmTransport: the job spans several nodes and no transport was given for the others");
  prefix_ = fmt::format("/topocoll-shm-{}-{}", all[0].pid, all[0].nonce);
  const std::size_t n = static_cast<std::size_t>(local_size_);
  sent_.assign(n * kChannels, 0);
  published_.assign(n * kChannels, 0);
  received_.assign(n * kChannels, 0);
  queued_.resize(n * kChannels);

  // The control segment: rings for every ordered pair of the node and channel (pages untouched
  // until a ring is used). The first rank creates it, the others map it once it exists.
  const std::string name = prefix_ + "-control";
  control_bytes_ = sizeof(Ring) * n * n * kChannels + sizeof(Board) * n;  // rings, then one board per rank
  std::string error;
  if (local_rank_ == 0) {
    const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) {
      error = fmt::format("shm_open({}): {}", name, errno_text(errno));
    } else {
      if (ftruncate(fd, static_cast<off_t>(control_bytes_)) != 0)
        error = fmt::format("ftruncate({}, {} bytes): {}", name, control_bytes_, errno_text(errno));
      close(fd);
      if (error.empty()) error = map_segment(name, control_bytes_, PROT_READ | PROT_WRITE, &control_);
    }
  }
  agree_ok(error, "creating the node's control segment");
  if (local_rank_ != 0) error = map_segment(name, control_bytes_, PROT_READ | PROT_WRITE, &control_);
  try {
    agree_ok(error, "mapping the node's control segment");
  } catch (...) {
    shm_unlink(name.c_str());
    throw;
  }
  shm_unlink(name.c_str());  // every rank of the node has it mapped (ENOENT after the first)
}

ShmTransport::~ShmTransport() {
  for (Region& r : regions_) {
    for (int l = 0; l < local_size_; ++l)
      if (l != local_rank_ && r.peer_base[static_cast<std::size_t>(l)])
        munmap(r.peer_base[static_cast<std::size_t>(l)], r.peer_bytes[static_cast<std::size_t>(l)]);
    munmap(r.base, r.bytes);
  }
  if (control_) munmap(control_, control_bytes_);
  if (node_ != MPI_COMM_NULL) MPI_Comm_free(&node_);
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void ShmTransport::node_barrier(const std::string& what) {
  MPI_Request r = MPI_REQUEST_NULL;
  MPI_Ibarrier(node_, &r);
  wait_bounded(r, timeout_, fmt::format("rank {}: shm transport: {}", rank_, what), peers_);
}

// Every rank of the node learns whether any failed `what`; each then throws (the failing one
// with its own reason).
void ShmTransport::agree_ok(const std::string& error, const std::string& what) {
  int ok = error.empty() ? 1 : 0, all_ok = 0;
  MPI_Request r = MPI_REQUEST_NULL;
  MPI_Iallreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, node_, &r);
  wait_bounded(r, timeout_, fmt::format("rank {}: shm transport: {}", rank_, what), peers_);
  if (!all_ok) fail_on_node(error, what);
}

void ShmTransport::fail_on_node(const std::string& mine, const std::string& what) {
  throw std::runtime_error(
      mine.empty() ? fmt::format("rank {}: shm transport: {} failed on another rank of this node", rank_, what)
                   : fmt::format("rank {}: shm transport: {}: {}", rank_, what, mine));
}

std::byte* ShmTransport::allocate(std::size_t bytes) {
  // mmap refuses 0 bytes; a page is the least a segment holds anyway.
  const std::size_t own = std::max<std::size_t>(bytes, static_cast<std::size_t>(sysconf(_SC_PAGESIZE)));
  const std::size_t index = regions_.size();
  auto name_of = [&](int local) { return fmt::format("{}-region{}-{}", prefix_, index, local); };
  Region region;
  region.bytes = own;
  std::string error = create_segment(name_of(local_rank_), own, &region.base);
  agree_ok(error, fmt::format("creating a shared region of {} bytes", own));
  const std::string mine = name_of(local_rank_);
  region.peer_bytes.resize(static_cast<std::size_t>(local_size_));
  region.peer_base.assign(static_cast<std::size_t>(local_size_), nullptr);
  const auto own_bytes = static_cast<std::uint64_t>(own);
  std::vector<std::uint64_t> sizes(static_cast<std::size_t>(local_size_));
  MPI_Allgather(&own_bytes, 1, MPI_UINT64_T, sizes.data(), 1, MPI_UINT64_T, node_);
  for (int l = 0; l < local_size_ && error.empty(); ++l) {
    const auto i = static_cast<std::size_t>(l);
    region.peer_bytes[i] = static_cast<std::size_t>(sizes[i]);
    if (l == local_rank_) {
      region.peer_base[i] = region.base;
      continue;
    }
    std::byte* p = nullptr;  // read-write: a push writes into the peer's region
    error = map_segment(name_of(l), region.peer_bytes[i], PROT_READ | PROT_WRITE, &p);
    region.peer_base[i] = p;
  }
  try {
    agree_ok(error, "mapping the node's shared regions");
  } catch (...) {
    shm_unlink(mine.c_str());
    for (int l = 0; l < local_size_; ++l)
      if (l != local_rank_ && region.peer_base[static_cast<std::size_t>(l)])
        munmap(region.peer_base[static_cast<std::size_t>(l)], region.peer_bytes[static_cast<std::size_t>(l)]);
    munmap(region.base, region.bytes);
    throw;
  }
  shm_unlink(mine.c_str());          // every rank of the node has it mapped: a crash from here leaks nothing
  std::memset(region.base, 0, own);  // fault the pages in here, not in a timed run
  regions_.push_back(std::move(region));
  return regions_.back().base;
}

ShmTransport::Ring& ShmTransport::ring(int src_local, int dst_local, int channel) const {
  const std::size_t i = (static_cast<std::size_t>(src_local) * static_cast<std::size_t>(local_size_) +
                         static_cast<std::size_t>(dst_local)) *
                            kChannels +
                        static_cast<std::size_t>(channel);
  return reinterpret_cast<Ring*>(control_)[i];
}

ShmTransport::Board& ShmTransport::board(int local) const {
  const std::size_t rings = static_cast<std::size_t>(local_size_) * static_cast<std::size_t>(local_size_) * kChannels;
  return reinterpret_cast<Board*>(control_ + rings * sizeof(Ring))[local];
}

void ShmTransport::check(int peer, int channel, const char* what) const {
  if (peer < 0 || peer >= size_) throw InputError(fmt::format("{} peer {}: the job has {} ranks", what, peer, size_));
  if (channel < 0 || (direct(peer) && channel >= kChannels))
    throw InputError(fmt::format("{} peer {} on channel {}: the shm transport has channels 0 to {}", what, peer,
                                 channel, kChannels - 1));
}

Transport::Request ShmTransport::post_send(int peer, int channel, const void* data, std::size_t bytes) {
  check(peer, channel, "send to");
  if (!direct(peer)) {
    const Request r = remote_->post_send(peer, channel, data, bytes);
    TOPOCOLL_ASSERT(r == kDone || r < kRemote, "shm transport: the remote transport's request " + std::to_string(r));
    return r == kDone ? kDone : r | kRemote;
  }
  const int local = local_of_[static_cast<std::size_t>(peer)];
  // Where the receiver finds the data: a region it maps, else this process's memory (CMA).
  const auto* p = static_cast<const std::byte*>(data);
  Descriptor d{kCma, 0, reinterpret_cast<std::uint64_t>(p), bytes};
  for (std::size_t i = 0; i < regions_.size(); ++i)
    if (p >= regions_[i].base && p + bytes <= regions_[i].base + regions_[i].bytes) {
      d.region = static_cast<std::uint32_t>(i);
      d.offset = static_cast<std::uint64_t>(p - regions_[i].base);
      break;
    }
  const std::uint64_t seq = sent_[key(local, channel)];
  queue(local, channel, d);
  return slots_.acquire(Slot{true, peer, local, channel, seq, nullptr, bytes});
}

// The next send to (local, channel): its descriptor queued, and published while the ring has room.
void ShmTransport::queue(int local, int channel, const Descriptor& d) {
  const std::size_t k = key(local, channel);
  ++sent_[k];
  ++sends_;
  queued_[k].push_back(d);
  ++queued_count_;
  publish(k);
}

void ShmTransport::begin_run(std::uint64_t fingerprint, std::byte* const* buffers) {
  Board& b = board(local_rank_);
  fingerprint_ = fingerprint;
  ++run_;
  store_relaxed(b.fingerprint, fingerprint);
  for (int i = 0; i < 3; ++i) {
    std::uint64_t region = kNoRegion, offset = 0;
    for (std::size_t r = 0; r < regions_.size() && buffers[i] != nullptr; ++r)
      if (buffers[i] >= regions_[r].base && buffers[i] < regions_[r].base + regions_[r].bytes) {
        region = r;
        offset = static_cast<std::uint64_t>(buffers[i] - regions_[r].base);
        break;
      }
    store_relaxed(b.region[i], region);
    store_relaxed(b.offset[i], offset);
  }
  store(b.run, run_);
}

void ShmTransport::note_progress(int channel, std::uint32_t done) {
  if (channel < 0 || channel >= kChannels) return;
  store(board(local_rank_).progress[channel], progress_word(run_, done));
}

// Where the peer's `buffer` + offset is writable from here, once the peer is in this run of a plan
// of the same fingerprint and its channel has completed `gate` ops; else null.
std::byte* ShmTransport::push_target(int peer, int channel, std::uint8_t buffer, std::size_t offset, std::size_t bytes,
                                     std::uint32_t gate) {
  if (!pushes() || peer < 0 || peer >= size_ || !direct(peer) || peer == rank_ || channel < 0 || channel >= kChannels ||
      buffer > 2)
    return nullptr;
  const int local = local_of_[static_cast<std::size_t>(peer)];
  Board& b = board(local);
  if (load(b.run) != run_ || load_relaxed(b.fingerprint) != fingerprint_) return nullptr;
  if (gate > 0 && !passed_gate(load(b.progress[channel]), run_, gate)) return nullptr;
  const std::uint64_t region = load_relaxed(b.region[buffer]);
  if (region >= regions_.size()) return nullptr;
  const Region& g = regions_[region];
  const std::uint64_t at = load_relaxed(b.offset[buffer]) + offset;
  if (at + bytes > g.peer_bytes[static_cast<std::size_t>(local)]) return nullptr;
  return g.peer_base[static_cast<std::size_t>(local)] + at;
}

void ShmTransport::post_pushed(int peer, int channel, const std::byte* target, std::size_t bytes) {
  check(peer, channel, "push to");
  const int local = local_of_[static_cast<std::size_t>(peer)];
  TOPOCOLL_ASSERT(local >= 0, fmt::format("shm transport: push to peer {} on another node", peer));
  for (std::size_t r = 0; r < regions_.size(); ++r) {
    const std::byte* base = regions_[r].peer_base[static_cast<std::size_t>(local)];
    if (target >= base && target + bytes <= base + regions_[r].peer_bytes[static_cast<std::size_t>(local)]) {
      queue(local, channel,
            Descriptor{static_cast<std::uint32_t>(r) | kPushed, 0, static_cast<std::uint64_t>(target - base), bytes});
      ++pushed_;
      return;
    }
  }
  TOPOCOLL_ASSERT(false, fmt::format("shm transport: pushed {} bytes to peer {} outside its regions", bytes, peer));
}

// Moves queued descriptors of (dst, channel) into its ring while it has free slots.
void ShmTransport::publish(std::size_t k) {
  std::deque<Descriptor>& q = queued_[k];
  if (q.empty()) return;
  const int local = static_cast<int>(k / kChannels), channel = static_cast<int>(k % kChannels);
  Ring& r = ring(local_rank_, local, channel);
  const std::uint64_t acked = load(r.acked);
  std::uint64_t& posted = published_[k];
  while (!q.empty() && posted - acked < kRingSlots) {
    r.slots[posted % kRingSlots] = q.front();
    q.pop_front();
    --queued_count_;
    ++posted;
  }
  store(r.posted, posted);
}

void ShmTransport::publish_all() {
  if (queued_count_ == 0) return;
  for (std::size_t k = 0; k < queued_.size() && queued_count_ > 0; ++k) publish(k);
}

bool ShmTransport::test_send(Request r) {
  if (r & kRemote) return remote_->test_send(r & ~kRemote);
  heartbeat();
  const Slot& s = slots_.at(r, "shm transport: test_send");
  const std::size_t k = key(s.local, s.channel);
  publish(k);
  if (load(ring(local_rank_, s.local, s.channel).acked) <= s.seq) return false;
  slots_.release(r);
  return true;
}

Transport::Request ShmTransport::post_recv(int peer, int channel, void* dst, std::size_t bytes) {
  check(peer, channel, "receive from");
  if (!direct(peer)) {
    const Request r = remote_->post_recv(peer, channel, dst, bytes);
    TOPOCOLL_ASSERT(r == kDone || r < kRemote, "shm transport: the remote transport's request " + std::to_string(r));
    return r == kDone ? kDone : r | kRemote;
  }
  // Never completed here, even when the message is in: the executor may want to consume it in
  // place (test_recv_consume) rather than have it copied into `dst`.
  return slots_.acquire(Slot{false, peer, local_of_[static_cast<std::size_t>(peer)], channel, 0, dst, bytes});
}

// The receive of `s` when its message is in the ring: one copy from the sender's memory into the
// destination, then the slot is handed back (acked).
bool ShmTransport::try_receive(Slot& s, Consume consume, void* context, const void* wanted, bool* landed) {
  Ring& r = ring(s.local, local_rank_, s.channel);
  std::uint64_t& received = received_[key(s.local, s.channel)];
  if (load(r.posted) == received) return false;
  const Descriptor d = r.slots[received % kRingSlots];
  if (d.bytes != s.bytes)
    throw InputError(fmt::format(
        "rank {}: the message from peer {} on channel {} has {} bytes, expected {}: the ranks disagree on the "
        "collective (count, dtype or algorithm)",
        rank_, s.peer, s.channel, d.bytes, s.bytes));
  if (d.bytes > 0) {
    if (d.region != kCma && (d.region & kPushed)) {
      // Pushed: the bytes are in this rank's own region already, where the sender wrote them (the
      // receive's destination, unless the executor posted it into staging: copied from there).
      const std::uint32_t region = d.region & ~kPushed;
      TOPOCOLL_ASSERT(region < regions_.size() && d.offset + d.bytes <= regions_[region].bytes,
                      fmt::format("shm transport: a push from peer {} outside region {}", s.peer, region));
      const std::byte* at = regions_[region].base + d.offset;
      if (consume)
        consume(context, at);
      else if (at == wanted && landed != nullptr)
        *landed = true;  // where the executor wants it: staging stays unwritten
      else if (at != s.dst)
        std::memcpy(s.dst, at, d.bytes);
      consume = nullptr;
    } else if (d.region != kCma) {
      TOPOCOLL_ASSERT(d.region < regions_.size(), fmt::format("shm transport: region {} of peer {}", d.region, s.peer));
      const Region& g = regions_[d.region];
      const std::byte* message = g.peer_base[static_cast<std::size_t>(s.local)] + d.offset;
      if (consume)
        consume(context, message);  // the one pass over the peer's bytes
      else
        std::memcpy(s.dst, message, d.bytes);
      consume = nullptr;
    } else {
      // Outside the shared regions: the kernel copies from the sender's address space.
      std::size_t done = 0;
      while (done < d.bytes) {
        iovec to{static_cast<std::byte*>(s.dst) + done, d.bytes - done};
        iovec from{reinterpret_cast<void*>(d.offset + done), d.bytes - done};
        const ssize_t n =
            process_vm_readv(static_cast<pid_t>(pid_of_[static_cast<std::size_t>(s.local)]), &to, 1, &from, 1, 0);
        if (n <= 0)
          throw std::runtime_error(
              fmt::format("rank {}: shm transport: process_vm_readv from rank {} (pid {}), {} bytes: {}", rank_, s.peer,
                          pid_of_[static_cast<std::size_t>(s.local)], d.bytes - done, errno_text(n < 0 ? errno : EIO)));
        done += static_cast<std::size_t>(n);
      }
    }
  }
  if (consume) consume(context, static_cast<const std::byte*>(s.dst));  // CMA: copied first
  store(r.acked, ++received);
  return true;
}

bool ShmTransport::test_recv(Request r) {
  if (r & kRemote) return remote_->test_recv(r & ~kRemote);
  heartbeat();
  publish_all();  // a peer may wait for a send of ours still queued before it sends this message
  Slot& s = slots_.at(r, "shm transport: test_recv");
  try {
    if (!try_receive(s)) return false;
  } catch (...) {
    slots_.release(r);
    throw;
  }
  slots_.release(r);
  return true;
}

bool ShmTransport::test_recv_staged(Request r, const void* wanted, bool& landed) {
  landed = false;
  if (r & kRemote) return remote_->test_recv(r & ~kRemote);
  heartbeat();
  publish_all();
  Slot& s = slots_.at(r, "shm transport: test_recv_staged");
  try {
    if (!try_receive(s, nullptr, nullptr, wanted, &landed)) return false;
  } catch (...) {
    slots_.release(r);
    throw;
  }
  slots_.release(r);
  return true;
}

bool ShmTransport::test_recv_consume(Request r, Consume consume, void* context) {
  TOPOCOLL_ASSERT(!(r & kRemote), "shm transport: test_recv_consume of a receive from another node");
  heartbeat();
  publish_all();
  Slot& s = slots_.at(r, "shm transport: test_recv_consume");
  try {
    if (!try_receive(s, consume, context)) return false;
  } catch (...) {
    slots_.release(r);
    throw;
  }
  slots_.release(r);
  return true;
}

void ShmTransport::wait(std::chrono::steady_clock::time_point deadline) {
  publish_all();
  if (remote_) {
    remote_->wait(deadline);
  } else {
    heartbeat();
    std::this_thread::yield();
  }
}

void ShmTransport::progress() {
  publish_all();
  if (remote_) remote_->progress();
}

std::string ShmTransport::describe() const {
  std::string out = fmt::format(
      "shm: {} rank{} on this node read each other's buffers in place (one copy per message; {} channels x {} "
      "slots per pair)",
      local_size_, local_size_ == 1 ? "" : "s", kChannels, kRingSlots);
  if (local_size_ < size_)
    out += fmt::format("; the {} ranks on other nodes over the second transport", size_ - local_size_);
  return out;
}

}  // namespace topocoll::runtime
