// Recursive doubling's roles, pinned to MPICH's rule (src/mpi/coll/allreduce/
// allreduce_intra_recursive_doubling.c: pof2, rem = p - pof2; even ranks < 2*rem send to rank+1;
// newrank = rank/2 below 2*rem, rank - rem above; the partner of newrank ^ mask is
// newdst < rem ? 2*newdst + 1 : newdst + rem). The tables below are worked by hand from it.
#include "algorithms/patterns/recursive_doubling.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <set>

using namespace topocoll::algo;

namespace {

RdRole folds_to(int q) {
  RdRole r;
  r.fold_to = q;
  return r;
}
RdRole exchanges(int from, std::vector<int> partners) {
  RdRole r;
  r.fold_from = from;
  r.partners = std::move(partners);
  return r;
}

}  // namespace

TEST_CASE("recursive doubling: MPICH's roles for p = 1, 2, 4, 5, 6, 7, 8") {
  CHECK(rd_role(1, 0) == exchanges(-1, {}));
  CHECK(rd_role(2, 0) == exchanges(-1, {1}));
  CHECK(rd_role(2, 1) == exchanges(-1, {0}));
  const std::vector<RdRole> p4 = {exchanges(-1, {1, 2}), exchanges(-1, {0, 3}), exchanges(-1, {3, 0}),
                                  exchanges(-1, {2, 1})};
  // p = 5: m = 4, r = 1; position 0 folds into 1; virtual 0..3 are positions 1, 2, 3, 4.
  const std::vector<RdRole> p5 = {folds_to(1), exchanges(0, {2, 3}), exchanges(-1, {1, 4}), exchanges(-1, {4, 1}),
                                  exchanges(-1, {3, 2})};
  // p = 6: m = 4, r = 2; 0 -> 1, 2 -> 3; virtual 0..3 are positions 1, 3, 4, 5.
  const std::vector<RdRole> p6 = {folds_to(1),          exchanges(0, {3, 4}),  folds_to(3),
                                  exchanges(2, {1, 5}), exchanges(-1, {5, 1}), exchanges(-1, {4, 3})};
  // p = 7: m = 4, r = 3; 0 -> 1, 2 -> 3, 4 -> 5; virtual 0..3 are positions 1, 3, 5, 6.
  const std::vector<RdRole> p7 = {folds_to(1), exchanges(0, {3, 5}), folds_to(3),          exchanges(2, {1, 6}),
                                  folds_to(5), exchanges(4, {6, 1}), exchanges(-1, {5, 3})};
  const std::vector<RdRole> p8 = {exchanges(-1, {1, 2, 4}), exchanges(-1, {0, 3, 5}), exchanges(-1, {3, 0, 6}),
                                  exchanges(-1, {2, 1, 7}), exchanges(-1, {5, 6, 0}), exchanges(-1, {4, 7, 1}),
                                  exchanges(-1, {7, 4, 2}), exchanges(-1, {6, 5, 3})};
  for (const auto* table : {&p4, &p5, &p6, &p7, &p8}) {
    const int p = static_cast<int>(table->size());
    for (int pos = 0; pos < p; ++pos) {
      CAPTURE(p);
      CAPTURE(pos);
      CHECK(rd_role(p, pos) == (*table)[static_cast<std::size_t>(pos)]);
    }
  }
}

TEST_CASE("recursive doubling: p = 1..17, pairings symmetric, folds paired, everyone ends with everything") {
  for (int p = 1; p <= 17; ++p) {
    CAPTURE(p);
    int m = 1;
    while (m * 2 <= p) m *= 2;
    int log_m = 0;
    while ((1 << log_m) < m) ++log_m;
    const int r = p - m;
    std::vector<RdRole> roles;
    for (int pos = 0; pos < p; ++pos) roles.push_back(rd_role(p, pos));

    int folding = 0;
    for (int pos = 0; pos < p; ++pos) {
      const RdRole& role = roles[static_cast<std::size_t>(pos)];
      CAPTURE(pos);
      if (role.fold_to >= 0) {
        // Only the even positions of the first 2r fold, into their odd neighbour, and then
        // take no part in the exchanges.
        ++folding;
        CHECK(pos < 2 * r);
        CHECK(pos % 2 == 0);
        CHECK(role.fold_to == pos + 1);
        CHECK(role.fold_from == -1);
        CHECK(role.partners.empty());
        CHECK(roles[static_cast<std::size_t>(role.fold_to)].fold_from == pos);
        continue;
      }
      CHECK(static_cast<int>(role.partners.size()) == log_m);
      if (role.fold_from >= 0) CHECK(roles[static_cast<std::size_t>(role.fold_from)].fold_to == pos);
      CHECK((pos < 2 * r) == (role.fold_from >= 0));
      // Step by step the partner of my partner is me, and never a position that folded.
      for (std::size_t s = 0; s < role.partners.size(); ++s) {
        const int q = role.partners[s];
        REQUIRE(q >= 0);
        REQUIRE(q < p);
        CHECK(q != pos);
        CHECK(roles[static_cast<std::size_t>(q)].fold_to == -1);
        REQUIRE(roles[static_cast<std::size_t>(q)].partners.size() == role.partners.size());
        CHECK(roles[static_cast<std::size_t>(q)].partners[s] == pos);
      }
    }
    CHECK(folding == r);

    // Run the roles on sets of contributions: fold, exchange step by step, unfold.
    std::vector<std::set<int>> has(static_cast<std::size_t>(p));
    for (int pos = 0; pos < p; ++pos) has[static_cast<std::size_t>(pos)] = {pos};
    for (int pos = 0; pos < p; ++pos)
      if (roles[static_cast<std::size_t>(pos)].fold_from >= 0)
        has[static_cast<std::size_t>(pos)].insert(roles[static_cast<std::size_t>(pos)].fold_from);
    for (int s = 0; s < log_m; ++s) {
      const std::vector<std::set<int>> before = has;
      for (int pos = 0; pos < p; ++pos) {
        const RdRole& role = roles[static_cast<std::size_t>(pos)];
        if (role.fold_to >= 0) continue;
        const auto& theirs = before[static_cast<std::size_t>(role.partners[static_cast<std::size_t>(s)])];
        // Recursive doubling never receives a contribution twice.
        for (int x : theirs) CHECK(before[static_cast<std::size_t>(pos)].count(x) == 0);
        has[static_cast<std::size_t>(pos)].insert(theirs.begin(), theirs.end());
      }
    }
    for (int pos = 0; pos < p; ++pos)
      if (roles[static_cast<std::size_t>(pos)].fold_to >= 0)
        has[static_cast<std::size_t>(pos)] =
            has[static_cast<std::size_t>(roles[static_cast<std::size_t>(pos)].fold_to)];
    for (int pos = 0; pos < p; ++pos) CHECK(has[static_cast<std::size_t>(pos)].size() == static_cast<std::size_t>(p));
  }
}

TEST_CASE("recursive doubling: rd_steps is log2 m, + 1 or + 2 through the fold") {
  // p:                                1  2  3  4  5  6  7  8  9 10 11 12 13 14 15 16 17
  const std::vector<std::uint64_t> want = {0, 1, 2, 2, 3, 3, 4, 3, 4, 4, 4, 4, 5, 5, 5, 4, 5};
  for (int p = 1; p <= 17; ++p) {
    CAPTURE(p);
    CHECK(rd_steps(p) == want[static_cast<std::size_t>(p - 1)]);
  }
}
