// Helpers for the graph pass tests: run a net (fb::NetT) on the host, feed
// random inputs, count ops, and check that a pass kept the outputs.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kiln/interpreter.h"
#include "kiln/net_builder.h"
#include "kiln/passes.h"
#include "support/op_test.h"
#include "support/test_models.h"

namespace kiln::test {

constexpr float kPassTol = 1e-4f;

struct Feed {
  std::vector<int64_t> shape;
  std::vector<float> values;
};
using Feeds = std::map<std::string, Feed>;

inline int CountOps(const fb::NetT& net, fb::OpType type) {
  int n = 0;
  for (const auto& op : net.ops) n += op->type == type;
  return n;
}

inline std::string OpTypes(const fb::NetT& net) {
  std::string s;
  for (const auto& op : net.ops) s += (s.empty() ? "" : " ") + std::string(fb::EnumNameOpType(op->type));
  return s;
}

// The op of `type` (the first); fails the test when there is none.
inline const fb::OpT* FindOp(const fb::NetT& net, fb::OpType type) {
  for (const auto& op : net.ops)
    if (op->type == type) return op.get();
  ADD_FAILURE() << "no " << fb::EnumNameOpType(type) << " op in: " << OpTypes(net);
  return nullptr;
}

// Random values in [-1, 1) for every graph input; symbolic dims take `dim`.
inline Feeds RandomFeeds(const fb::NetT& net, uint32_t seed, int64_t dim = 5) {
  Feeds feeds;
  for (int t : net.inputs) {
    const fb::TensorT& tt = *net.tensors[static_cast<size_t>(t)];
    Feed f;
    for (const auto& d : tt.shape) f.shape.push_back(d->size >= 0 ? d->size : dim);
    f.values = RandomFloats(static_cast<size_t>(Numel(f.shape)), seed++);
    feeds[tt.name] = f;
  }
  return feeds;
}

// Runs `net` on the host (3 threads); the outputs in graph-output order.
inline StatusOr<std::vector<std::vector<float>>> RunNet(const fb::NetT& net, const Feeds& feeds) {
  NetBuilder b(net.name);
  b.net() = net;
  KILN_ASSIGN_OR_RETURN(auto bytes, b.finish());
  KILN_ASSIGN_OR_RETURN(auto interp, Interpreter::createFromBuffer(bytes.data(), bytes.size()));
  ScheduleConfig config;
  config.numThread = 3;
  KILN_ASSIGN_OR_RETURN(Session * session, interp->createSession(config));
  for (auto& [name, f] : feeds) {
    Tensor* t = session->getInput(name);
    if (!t) return NotFound("no input '%s'", name.c_str());
    KILN_RETURN_IF_ERROR(session->resizeTensor(t, f.shape));
  }
  KILN_RETURN_IF_ERROR(session->resize());
  for (auto& [name, f] : feeds) {
    auto host = Tensor::wrap(f.shape, fb::DataType::F32, const_cast<float*>(f.values.data()));
    KILN_RETURN_IF_ERROR(session->getInput(name)->copyFromHostTensor(*host));
  }
  KILN_RETURN_IF_ERROR(session->run());
  std::vector<std::vector<float>> outs;
  for (int o : net.outputs) {
    const std::string& name = net.tensors[static_cast<size_t>(o)]->name;
    Tensor* t = session->getOutput(name);
    if (!t) return NotFound("no output '%s'", name.c_str());
    if (t->dtype() != fb::DataType::F32) return Unsupported("output '%s' is not f32", name.c_str());
    std::vector<float> v(static_cast<size_t>(t->elementCount()));
    auto host = Tensor::wrap(t->shape(), fb::DataType::F32, v.data());
    KILN_RETURN_IF_ERROR(t->copyToHostTensor(host.get()));
    outs.push_back(std::move(v));
  }
  return outs;
}

// Both nets load, run, and give the same outputs (within kPassTol) on the
// same random inputs; the graph output names are the same.
inline void ExpectSameOutputs(const fb::NetT& before, const fb::NetT& after, uint32_t seed = 7) {
  ASSERT_EQ(before.outputs.size(), after.outputs.size());
  for (size_t i = 0; i < before.outputs.size(); ++i)
    EXPECT_EQ(before.tensors[static_cast<size_t>(before.outputs[i])]->name,
              after.tensors[static_cast<size_t>(after.outputs[i])]->name);
  Feeds feeds = RandomFeeds(before, seed);
  auto want = RunNet(before, feeds);
  ASSERT_TRUE(want.ok()) << "original: " << want.status().ToString();
  auto got = RunNet(after, feeds);
  ASSERT_TRUE(got.ok()) << "optimized: " << got.status().ToString() << "\nops: " << OpTypes(after);
  ASSERT_EQ(want->size(), got->size());
  for (size_t i = 0; i < want->size(); ++i) ExpectNear((*got)[i], (*want)[i], kPassTol, "output " + std::to_string(i));
}

// Runs `pass` on a copy of `net`; checks it made `rewrites` rewrites and
// kept the outputs; returns the rewritten net.
inline fb::NetT ApplyPass(const fb::NetT& net, const std::function<StatusOr<int>(fb::NetT&)>& pass, int rewrites) {
  fb::NetT after = net;
  StatusOr<int> n = pass(after);
  EXPECT_TRUE(n.ok()) << n.status().ToString();
  if (n.ok()) {
    EXPECT_EQ(*n, rewrites) << "ops after: " << OpTypes(after);
  }
  ExpectSameOutputs(net, after);
  return after;
}

}  // namespace kiln::test
