#include "runtime/communicator.hpp"

#include <fmt/format.h>

#include "common/errors.hpp"

namespace topocoll::runtime {

Communicator::Communicator(MPI_Comm world) {
  MPI_Comm_dup(world, &comm_);
  // Errors (a peer found gone) come back as return codes to the bounded waits, which report them
  // as JobTimeout naming the call: never an abort of the job from inside MPI.
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node_comm_);
  MPI_Comm_rank(node_comm_, &local_rank_);
  MPI_Comm_size(node_comm_, &local_size_);
  // Node index: the rank of this node's leader among the leaders (ordered by world rank).
  MPI_Comm leaders = MPI_COMM_NULL;
  MPI_Comm_split(comm_, local_rank_ == 0 ? 0 : MPI_UNDEFINED, rank_, &leaders);
  if (leaders != MPI_COMM_NULL) {
    MPI_Comm_rank(leaders, &node_index_);
    MPI_Comm_size(leaders, &nodes_);
    MPI_Comm_free(&leaders);
  }
  int info[2] = {node_index_, nodes_};
  MPI_Bcast(info, 2, MPI_INT, 0, node_comm_);
  node_index_ = info[0];
  nodes_ = info[1];
  node_of_.assign(static_cast<std::size_t>(size_), 0);
  MPI_Allgather(&node_index_, 1, MPI_INT, node_of_.data(), 1, MPI_INT, comm_);
  int mm[2] = {-local_size_, local_size_};
  MPI_Allreduce(MPI_IN_PLACE, mm, 2, MPI_INT, MPI_MAX, comm_);
  uniform_ = -mm[0] == mm[1];
}

Communicator::~Communicator() {
  if (node_comm_ != MPI_COMM_NULL) MPI_Comm_free(&node_comm_);
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

algo::Layout Communicator::layout() const {
  if (!uniform_)
    throw InputError(fmt::format(
        "the job's nodes hold different numbers of ranks ({} on node {} of {}): expected the same on every node",
        local_size_, node_index_, nodes_));
  for (int r = 0; r < size_; ++r)
    if (node_of_[static_cast<std::size_t>(r)] != r / local_size_)
      throw InputError(
          fmt::format("rank {} is on node {}: expected ranks numbered node by node ({} per node; mpirun --map-by core)",
                      r, node_of_[static_cast<std::size_t>(r)], local_size_));
  return algo::uniform_layout(nodes_, local_size_);
}

// A barrier made non-blocking only for the progress hook has no timeout of its own: a day.
std::chrono::milliseconds Communicator::bound() const {
  return timeout_.count() > 0 ? timeout_ : std::chrono::milliseconds(std::chrono::hours(24));
}

std::string Communicator::label(const char* what) const {
  return context_.empty() ? fmt::format("rank {}: {}", rank_, what)
                          : fmt::format("rank {}: {} ({})", rank_, what, context_);
}

void Communicator::barrier() const {
  if (timeout_.count() <= 0 && !progress_) {
    MPI_Barrier(comm_);
    return;
  }
  MPI_Request r = MPI_REQUEST_NULL;
  MPI_Ibarrier(comm_, &r);
  wait_bounded(r, bound(), label("barrier"), peers_, progress_);
}

void Communicator::max_over_ranks(std::vector<double>& v) const {
  if (v.empty()) return;
  if (timeout_.count() <= 0) {
    MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_DOUBLE, MPI_MAX, comm_);
    return;
  }
  MPI_Request r = MPI_REQUEST_NULL;
  MPI_Iallreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_DOUBLE, MPI_MAX, comm_, &r);
  wait_bounded(r, timeout_, label("reducing the timings"), peers_, progress_);
}

std::uint64_t Communicator::sum_over_ranks(std::uint64_t v) const {
  std::uint64_t out = 0;
  if (timeout_.count() <= 0) {
    MPI_Allreduce(&v, &out, 1, MPI_UINT64_T, MPI_SUM, comm_);
    return out;
  }
  MPI_Request r = MPI_REQUEST_NULL;
  MPI_Iallreduce(&v, &out, 1, MPI_UINT64_T, MPI_SUM, comm_, &r);
  wait_bounded(r, timeout_, label("summing the error counts"), peers_, progress_);
  return out;
}

}  // namespace topocoll::runtime
