#include "algorithms/patterns/recursive_doubling.hpp"

#include <algorithm>

namespace topocoll::algo {

RdRole rd_role(int p, int pos) {
  int m = 1;
  while (m * 2 <= p) m *= 2;
  const int r = p - m;
  RdRole role;
  if (pos < 2 * r && pos % 2 == 0) {
    role.fold_to = pos + 1;
    return role;
  }
  if (pos < 2 * r) role.fold_from = pos - 1;
  // Virtual index among the m that exchange, and back.
  const int v = pos < 2 * r ? pos / 2 : pos - r;
  auto position = [r](int u) { return u < r ? 2 * u + 1 : u + r; };
  for (int mask = 1; mask < m; mask <<= 1) role.partners.push_back(position(v ^ mask));
  return role;
}

std::uint64_t rd_steps(int p) {
  std::vector<std::uint64_t> clock(static_cast<std::size_t>(p), 0);
  std::vector<RdRole> roles;
  for (int pos = 0; pos < p; ++pos) roles.push_back(rd_role(p, pos));
  auto at = [&clock](int q) -> std::uint64_t& { return clock[static_cast<std::size_t>(q)]; };
  for (int pos = 0; pos < p; ++pos)
    if (roles[static_cast<std::size_t>(pos)].fold_from >= 0) at(pos) = 1;
  const std::size_t log_m = roles.back().partners.size();
  for (std::size_t step = 0; step < log_m; ++step) {
    const std::vector<std::uint64_t> sent = clock;
    for (int pos = 0; pos < p; ++pos) {
      const RdRole& role = roles[static_cast<std::size_t>(pos)];
      if (role.fold_to < 0) at(pos) = std::max(at(pos), sent[static_cast<std::size_t>(role.partners[step])] + 1);
    }
  }
  for (int pos = 0; pos < p; ++pos)
    if (roles[static_cast<std::size_t>(pos)].fold_to >= 0)
      at(pos) = at(roles[static_cast<std::size_t>(pos)].fold_to) + 1;
  return *std::max_element(clock.begin(), clock.end());
}

}  // namespace topocoll::algo
