// The verifier: symbolic execution of a schedule under the execution contract of schedule.hpp.
//
// Every element of every buffer holds a symbolic value: the set of ranks whose input it is the
// reduction of, and which input element (as an offset from its own position). Values move in
// segments (runs of elements with the same rank set and offset), so a chunk costs O(segments),
// not O(elements). The verifier proves the collective's postcondition (every output element is
// the reduction of exactly the right inputs, each exactly once) or reports the first failure,
// naming rank, channel and operation index:
//   deadlock (the cycle of waiting ranks), unmatched send / receive, out-of-bounds chunk,
//   bad peer or channel, write to the input buffer, size mismatch between matched operations,
//   double-counted contribution, missing contribution, wrong element, uninitialised read,
//   write races between channels, and for switch ops (contract rule 11) a group that is not the
//   schedule's or that the rank is not a member of, parts of one instance of different sizes, a
//   receiver waiting for a part that never comes (deadlock or unmatched receive), parts that no
//   receiver takes (unmatched send), an NVLS group across NVLink domains or a SHARP group inside
//   one node (bad group, when node_of is given).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/ir/schedule.hpp"

namespace topocoll::algo {

enum class Failure : std::uint8_t {
  None,
  Deadlock,
  UnmatchedSend,
  UnmatchedRecv,
  OutOfBounds,
  BadPeer,
  BadChannel,
  WritesInput,
  SizeMismatch,
  DoubleCounted,
  Missing,
  WrongElement,
  Uninitialised,
  ChannelRace,
  BadGroup,
};
std::string_view to_string(Failure f);

struct VerifyOptions {
  bool in_place = false;     // input and output alias as NCCL's in-place calls do
  std::vector<int> node_of;  // node of each rank (bytes split intra/inter); empty: all one node
  // NVLink domain of each rank (nodes sharing one NVSwitch fabric, e.g. the trays of an NVL72);
  // empty: its node. NVLS groups must stay inside one domain.
  std::vector<int> domain_of;
};

struct VerifyResult {
  Failure failure = Failure::None;
  std::string message;           // names rank, channel, operation index
  std::uint64_t operations = 0;  // total over ranks
  std::uint64_t steps = 0;       // longest chain of dependent transfers (logical clock)
  // Bytes sent count what a rank gives to a switch too (switch_send): NVLS within its node,
  // SHARP to other nodes.
  std::uint64_t max_bytes_sent = 0;        // max over ranks
  std::uint64_t max_intra_bytes_sent = 0;  // to peers on the same node, max over ranks
  std::uint64_t max_inter_bytes_sent = 0;  // to peers on other nodes, max over ranks
  std::uint64_t total_bytes_sent = 0;
  bool ok() const { return failure == Failure::None; }
};

VerifyResult verify(const Schedule& schedule, const VerifyOptions& options = {});

}  // namespace topocoll::algo
