// MemoryPlanner property test: over random acquire/share/release sequences,
// no two buffers whose lifetimes intersect overlap in the pool, and the pool
// is never smaller than the lower bound it reports.
#include <gtest/gtest.h>

#include <random>

#include "memory_planner.h"

namespace kiln {
namespace {

void CheckPlan(const MemoryPlanner& planner, const MemoryPlanner::Plan& plan) {
  const auto& bufs = planner.buffers();
  for (size_t i = 0; i < bufs.size(); ++i) {
    EXPECT_EQ(plan.offsets[i] % 64, 0u);
    EXPECT_LE(plan.offsets[i] + bufs[i].bytes, plan.total);
    for (size_t j = i + 1; j < bufs.size(); ++j) {
      bool live_together = bufs[i].begin <= bufs[j].end && bufs[j].begin <= bufs[i].end;
      bool overlap = plan.offsets[i] < plan.offsets[j] + bufs[j].bytes &&
                     plan.offsets[j] < plan.offsets[i] + bufs[i].bytes;
      ASSERT_FALSE(live_together && overlap) << "buffers " << i << " and " << j << " overlap while both live";
    }
  }
  EXPECT_GE(plan.total, plan.lower_bound);
  EXPECT_LE(plan.total, plan.sum_of_buffers);
}

TEST(Planner, RandomLifetimesNeverOverlap) {
  std::mt19937 rng(42);
  double worst_ratio = 1.0;
  for (int graph = 0; graph < 300; ++graph) {
    MemoryPlanner planner;
    std::vector<int> live;
    int ops = 5 + static_cast<int>(rng() % 60);
    for (int op = 0; op < ops; ++op) {
      // Each op: acquire 1-2 outputs (sometimes sharing an input), release some inputs.
      int outs = 1 + static_cast<int>(rng() % 2);
      for (int k = 0; k < outs; ++k) {
        if (!live.empty() && rng() % 5 == 0) {
          int id = live[rng() % live.size()];
          planner.share(id);
          live.push_back(id);
        } else {
          live.push_back(planner.acquire(1 + rng() % 100000));
        }
      }
      int releases = static_cast<int>(rng() % 3);
      for (int k = 0; k < releases && live.size() > 1; ++k) {
        size_t pick = rng() % live.size();
        planner.release(live[pick]);
        live.erase(live.begin() + static_cast<long>(pick));
      }
    }
    MemoryPlanner::Plan plan = planner.plan();
    CheckPlan(planner, plan);
    if (plan.lower_bound) worst_ratio = std::max(worst_ratio, double(plan.total) / double(plan.lower_bound));
  }
  // Greedy-by-size is not optimal, but on these graphs it stays close.
  EXPECT_LT(worst_ratio, 2.0);
}

TEST(Planner, ChainReusesMemory) {
  MemoryPlanner planner;
  int prev = planner.acquire(1000);
  for (int i = 0; i < 10; ++i) {
    int next = planner.acquire(1000);
    planner.release(prev);
    prev = next;
  }
  MemoryPlanner::Plan plan = planner.plan();
  CheckPlan(planner, plan);
  EXPECT_EQ(plan.total, 2 * 1024u);  // ping-pong between two 64-aligned blocks
  EXPECT_EQ(plan.lower_bound, 2 * 1024u);
  EXPECT_EQ(plan.sum_of_buffers, 11 * 1024u);
}

TEST(Planner, NoReuseGivesEveryBufferItsOwnBlock) {
  MemoryPlanner planner;
  planner.setNoReuse(true);
  int a = planner.acquire(100);
  planner.release(a);
  int b = planner.acquire(100);
  planner.release(b);
  MemoryPlanner::Plan plan = planner.plan();
  EXPECT_NE(plan.offsets[0], plan.offsets[1]);
  EXPECT_EQ(plan.total, plan.sum_of_buffers);
}

}  // namespace
}  // namespace kiln
