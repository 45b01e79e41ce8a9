#include "runtime/ucx_transport.hpp"

#include <fmt/format.h>
#include <ucs/memory/memory_type.h>

#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <thread>

#include "common/errors.hpp"
#include "runtime/faults.hpp"

namespace topocoll::runtime {

namespace {

// Tags: the source rank in the high 32 bits, the channel in the low 31, bit 31 set for a bulk
// message (matched with a full mask).
constexpr std::uint32_t kBulkBit = 1u << 31;
ucp_tag_t make_tag(int source, int channel, bool bulk) {
  return (static_cast<ucp_tag_t>(static_cast<std::uint32_t>(source)) << 32) | static_cast<std::uint32_t>(channel) |
         (bulk ? kBulkBit : 0u);
}
constexpr ucp_tag_t kFullMask = ~ucp_tag_t{0};

void check(ucs_status_t status, const char* what) {
  if (status != UCS_OK) throw std::runtime_error(fmt::format("UCX: {} failed: {}", what, ucs_status_string(status)));
}

void check_mpi(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw std::runtime_error(fmt::format("UCX start-up: {} failed (MPI error {})", what, rc));
}

}  // namespace

// ---- start-up ---------------------------------------------------------------------------------

UcxTransport::UcxTransport(MPI_Comm comm, const UcxOptions& options) : bulk_bytes_(options.bulk_bytes) {
  check_mpi(MPI_Comm_dup(comm, &comm_), "MPI_Comm_dup");
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);

  // Peer failure handling on shared memory. UCX 1.13's sysv / posix transports offer it only when
  // asked (their ERROR_HANDLING option, default n); without it a peer-mode endpoint between two
  // processes of one host falls back to tcp over loopback (about 10x the latency). The transports'
  // options are read from the environment when the worker opens them (ucp_config_modify does not
  // reach them in 1.13: "invalid configurations"), so set them there; a value the user set wins.
  setenv("UCX_SYSV_ERROR_HANDLING", "y", 0);
  setenv("UCX_POSIX_ERROR_HANDLING", "y", 0);
  // Context and worker.
  ucp_config_t* config = nullptr;
  check(ucp_config_read(nullptr, nullptr, &config), "ucp_config_read");
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED | UCP_PARAM_FIELD_ESTIMATED_NUM_EPS;
  params.features = UCP_FEATURE_TAG;
  params.mt_workers_shared = 0;
  params.estimated_num_eps = static_cast<std::size_t>(size_);
  const ucs_status_t init = ucp_init(&params, config, &context_);
  ucp_config_release(config);
  check(init, "ucp_init");

  ucp_context_attr_t attr{};
  attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
  check(ucp_context_query(context_, &attr), "ucp_context_query");
  for (int t = 0; t < UCS_MEMORY_TYPE_LAST; ++t)
    if (attr.memory_types & UCS_BIT(t))
      memory_types_ += (memory_types_.empty() ? "" : ", ") + std::string(ucs_memory_type_names[t]);
  cuda_memory_ = (attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;

  ucp_worker_params_t wparams{};
  wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
  check(ucp_worker_create(context_, &wparams, &worker_), "ucp_worker_create");

  // Worker addresses through MPI: lengths first, then the bytes.
  ucp_address_t* address = nullptr;
  std::size_t address_length = 0;
  check(ucp_worker_get_address(worker_, &address, &address_length), "ucp_worker_get_address");
  const int length = static_cast<int>(address_length);
  std::vector<int> lengths(static_cast<std::size_t>(size_)), displs(static_cast<std::size_t>(size_));
  check_mpi(MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm_), "MPI_Allgather (address lengths)");
  int total = 0;
  for (int r = 0; r < size_; ++r) {
    displs[static_cast<std::size_t>(r)] = total;
    total += lengths[static_cast<std::size_t>(r)];
  }
  std::vector<std::byte> addresses(static_cast<std::size_t>(total));
  const int rc =
      MPI_Allgatherv(address, length, MPI_BYTE, addresses.data(), lengths.data(), displs.data(), MPI_BYTE, comm_);
  ucp_worker_release_address(worker_, address);
  check_mpi(rc, "MPI_Allgatherv (worker addresses)");

  // One endpoint per peer, with peer failure handling.
  endpoints_.assign(static_cast<std::size_t>(size_), nullptr);
  bulk_.assign(static_cast<std::size_t>(size_), nullptr);
  handlers_.resize(static_cast<std::size_t>(size_));
  failed_.assign(static_cast<std::size_t>(size_), UCS_OK);
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    handlers_[static_cast<std::size_t>(r)] = PeerHandler{this, r};
    ucp_ep_params_t ep{};
    ep.field_mask =
        UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
    ep.address = reinterpret_cast<const ucp_address_t*>(addresses.data() + displs[static_cast<std::size_t>(r)]);
    ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    ep.err_handler.cb = &UcxTransport::on_peer_error;
    ep.err_handler.arg = &handlers_[static_cast<std::size_t>(r)];
    const ucs_status_t s = ucp_ep_create(worker_, &ep, &endpoints_[static_cast<std::size_t>(r)]);
    if (s != UCS_OK)
      throw std::runtime_error(
          fmt::format("UCX: rank {}: ucp_ep_create to rank {} failed: {}", rank_, r, ucs_status_string(s)));
    if (bulk_bytes_ == 0) continue;
    ucp_ep_params_t bulk{};
    bulk.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    bulk.address = ep.address;
    const ucs_status_t b = ucp_ep_create(worker_, &bulk, &bulk_[static_cast<std::size_t>(r)]);
    if (b != UCS_OK)
      throw std::runtime_error(
          fmt::format("UCX: rank {}: ucp_ep_create (bulk) to rank {} failed: {}", rank_, r, ucs_status_string(b)));
  }
}

void UcxTransport::on_peer_error(void* arg, ucp_ep_h /*ep*/, ucs_status_t status) {
  const PeerHandler* h = static_cast<const PeerHandler*>(arg);
  h->self->failed_[static_cast<std::size_t>(h->peer)] = status;
}

UcxTransport::~UcxTransport() {
  // Unwinding towards an abort of the job: peers may be gone and UCX may still write into the
  // caller's buffers; leave everything as it is.
  if (std::uncaught_exceptions() > 0 || worker_ == nullptr) return;
  // 1. Every rank is done with its traffic (a barrier that keeps UCX progressing meanwhile).
  // 2. Close the endpoints (flush mode; a failed peer's with force), progressing until closed.
  // 3. Another progressing barrier, so no rank destroys its worker while a peer still closes.
  auto progressing_barrier = [&] {
    MPI_Request b = MPI_REQUEST_NULL;
    MPI_Ibarrier(comm_, &b);
    int done = 0;
    while (!done) {
      ucp_worker_progress(worker_);
      MPI_Test(&b, &done, MPI_STATUS_IGNORE);
    }
  };
  slots_.for_each([this](Request, Slot& s) {
    if (s.request != nullptr) {
      if (!s.send) ucp_request_cancel(worker_, s.request);
      while (ucp_request_check_status(s.request) == UCS_INPROGRESS) ucp_worker_progress(worker_);
      ucp_request_free(s.request);
      s.request = nullptr;
    }
  });
  progressing_barrier();
  std::vector<void*> closing;
  for (int r = 0; r < size_; ++r)
    for (ucp_ep_h ep : {endpoints_[static_cast<std::size_t>(r)], bulk_[static_cast<std::size_t>(r)]}) {
      if (ep == nullptr) continue;
      ucp_request_param_t p{};
      p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      p.flags = failed_[static_cast<std::size_t>(r)] != UCS_OK ? UCP_EP_CLOSE_FLAG_FORCE : 0;
      void* req = ucp_ep_close_nbx(ep, &p);
      if (req != nullptr && !UCS_PTR_IS_ERR(req)) closing.push_back(req);
    }
  for (void* req : closing) {
    while (ucp_request_check_status(req) == UCS_INPROGRESS) ucp_worker_progress(worker_);
    ucp_request_free(req);
  }
  progressing_barrier();
  ucp_worker_destroy(worker_);
  ucp_cleanup(context_);
  MPI_Comm_free(&comm_);
}

std::string UcxTransport::memory_support() const {
  unsigned major = 0, minor = 0, release = 0;
  ucp_get_version(&major, &minor, &release);
  return fmt::format("GPU memory {}supported by this UCX build (memory types: {}); UCX {}.{}.{}",
                     cuda_memory_ ? "" : "not ", memory_types_, major, minor, release);
}

// ---- requests ---------------------------------------------------------------------------------

Transport::Request UcxTransport::keep(void* request, bool send, int peer, int channel, std::size_t bytes) {
  return slots_.acquire(Slot{request, send, peer, channel, bytes});
}

void UcxTransport::release(Request r) {
  Slot& s = slots_.at(r, "UCX: release");
  ucp_request_free(s.request);
  s.request = nullptr;
  slots_.release(r);
}

void UcxTransport::check_peer(int peer, int channel, const char* what) const {
  if (peer < 0 || peer >= size_ || peer == rank_)
    throw InputError(
        fmt::format("UCX: rank {}: {} peer {}: expected another rank of 0..{}", rank_, what, peer, size_ - 1));
  if (channel < 0 || static_cast<std::uint32_t>(channel) >= kBulkBit)
    throw InputError(fmt::format("UCX: rank {}: {} peer {} on channel {}: expected a channel in 0..{}", rank_, what,
                                 peer, channel, kBulkBit - 1));
}

void UcxTransport::throw_failed(const Slot& s, ucs_status_t status, const char* what) const {
  if (status == UCS_ERR_MESSAGE_TRUNCATED)
    throw InputError(fmt::format(
        "UCX: rank {}: the message from peer {} on channel {} has more than {} bytes, expected {}: the ranks "
        "disagree on the collective (count, dtype or algorithm)",
        rank_, s.peer, s.channel, s.bytes, s.bytes));
  const ucs_status_t peer_status = failed_[static_cast<std::size_t>(s.peer)];
  throw std::runtime_error(
      fmt::format("UCX: rank {}: {} peer {} on channel {} ({} bytes) failed: {}{}", rank_, what, s.peer, s.channel,
                  s.bytes, ucs_status_string(status),
                  peer_status != UCS_OK ? fmt::format(" (rank {} failed: {})", s.peer, ucs_status_string(peer_status))
                                        : std::string()));
}

Transport::Request UcxTransport::post_send(int peer, int channel, const void* data, std::size_t bytes) {
  check_peer(peer, channel, "send to");
  const Slot s{nullptr, true, peer, channel, bytes};
  if (failed_[static_cast<std::size_t>(peer)] != UCS_OK)
    throw_failed(s, failed_[static_cast<std::size_t>(peer)], "send to");
  ucp_request_param_t p{};  // contiguous bytes, no callback: completion is polled
  const bool bulk = bulk_bytes_ > 0 && bytes >= bulk_bytes_;
  ucp_ep_h ep = (bulk ? bulk_ : endpoints_)[static_cast<std::size_t>(peer)];
  void* req = ucp_tag_send_nbx(ep, data, bytes, make_tag(rank_, channel, bulk), &p);
  if (req == nullptr) return kDone;  // completed at once (eager)
  if (UCS_PTR_IS_ERR(req)) throw_failed(s, UCS_PTR_STATUS(req), "send to");
  return keep(req, true, peer, channel, bytes);
}

bool UcxTransport::test_send(Request r) {
  heartbeat();  // the peer board: this rank waits in topocoll
  ucp_worker_progress(worker_);
  const Slot& s = slots_.at(r, "UCX: test_send");
  const ucs_status_t status = ucp_request_check_status(s.request);
  if (status == UCS_INPROGRESS) return false;
  const Slot copy = s;
  release(r);
  if (status != UCS_OK) throw_failed(copy, status, "send to");
  return true;
}

Transport::Request UcxTransport::post_recv(int peer, int channel, void* dst, std::size_t bytes) {
  check_peer(peer, channel, "receive from");
  const Slot s{nullptr, false, peer, channel, bytes};
  if (failed_[static_cast<std::size_t>(peer)] != UCS_OK)
    throw_failed(s, failed_[static_cast<std::size_t>(peer)], "receive from");
  // Always a request (no immediate completion): UCX 1.13.1 reported length 0 in recv_info for
  // receives that completed at once, and the length is what catches a message of the wrong size.
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  const bool bulk = bulk_bytes_ > 0 && bytes >= bulk_bytes_;
  void* req = ucp_tag_recv_nbx(worker_, dst, bytes, make_tag(peer, channel, bulk), kFullMask, &p);
  if (UCS_PTR_IS_ERR(req)) throw_failed(s, UCS_PTR_STATUS(req), "receive from");
  TOPOCOLL_ASSERT(req != nullptr, "ucp_tag_recv_nbx completed at once despite UCP_OP_ATTR_FLAG_NO_IMM_CMPL");
  return keep(req, false, peer, channel, bytes);
}

bool UcxTransport::test_recv(Request r) {
  heartbeat();  // the peer board: this rank waits in topocoll
  ucp_worker_progress(worker_);
  const Slot s = slots_.at(r, "UCX: test_recv");
  ucp_tag_recv_info_t info{};
  const ucs_status_t status = ucp_tag_recv_request_test(s.request, &info);
  if (status == UCS_INPROGRESS) {
    // A tagged receive is posted on the worker, not on the peer's endpoint: a failed peer does not
    // fail it, so look at the peer here.
    const ucs_status_t peer_status = failed_[static_cast<std::size_t>(s.peer)];
    if (peer_status == UCS_OK) return false;
    ucp_request_cancel(worker_, s.request);
    while (ucp_request_check_status(s.request) == UCS_INPROGRESS) ucp_worker_progress(worker_);
    release(r);
    throw_failed(s, peer_status, "receive from");
  }
  release(r);
  if (status != UCS_OK) throw_failed(s, status, "receive from");
  if (info.length != s.bytes)
    throw InputError(fmt::format(
        "UCX: rank {}: the message from peer {} on channel {} has {} bytes, expected {}: the ranks disagree on "
        "the collective (count, dtype or algorithm)",
        rank_, s.peer, s.channel, info.length, s.bytes));
  return true;
}

void UcxTransport::progress() {
  ucp_worker_progress(worker_);
}

void UcxTransport::wait(std::chrono::steady_clock::time_point /*deadline*/) {
  heartbeat();  // the peer board: this rank waits in topocoll
  if (ucp_worker_progress(worker_) == 0) std::this_thread::yield();
}

}  // namespace topocoll::runtime
