// --fp16: f32 weights stored as f16 (half the file), each followed by a Cast
// back to f32 that the session computes once at resize (a constant
// subgraph), so kernels still see f32.
#include "fp16.h"

#include <cstring>
#include <map>

#include "half.h"

namespace kiln {

StatusOr<int> StoreWeightsAsF16(fb::NetT& net, size_t min_elements) {
  std::map<int, int> widened;  // f16 constant -> its f32 Cast output
  std::vector<std::unique_ptr<fb::OpT>> casts;
  std::vector<bool> is_output(net.tensors.size(), false);
  for (int t : net.outputs) is_output[static_cast<size_t>(t)] = true;
  for (size_t i = 0; i < net.tensors.size(); ++i) {
    fb::TensorT& t = *net.tensors[i];
    size_t n = t.data.size() / 4;
    if (t.dtype != fb::DataType::F32 || t.data.empty() || t.external || n < min_elements || is_output[i]) continue;
    std::vector<uint8_t> half(n * 2);
    for (size_t k = 0; k < n; ++k) {
      float v;
      std::memcpy(&v, t.data.data() + k * 4, 4);
      uint16_t h = FloatToHalf(v);
      std::memcpy(half.data() + k * 2, &h, 2);
    }
    t.data = std::move(half);
    t.dtype = fb::DataType::F16;
    auto wide = std::make_unique<fb::TensorT>();
    wide->name = t.name + "/f32";
    wide->dtype = fb::DataType::F32;
    for (auto& d : t.shape) wide->shape.push_back(std::make_unique<fb::DimT>(*d));
    int w = static_cast<int>(net.tensors.size());
    net.tensors.push_back(std::move(wide));
    auto cast = std::make_unique<fb::OpT>();
    cast->type = fb::OpType::Cast;
    cast->name = t.name + "/widen";
    cast->inputs = {static_cast<int>(i)};
    cast->outputs = {w};
    fb::CastParamsT p;
    p.to = fb::DataType::F32;
    cast->params.Set(std::move(p));
    casts.push_back(std::move(cast));
    widened[static_cast<int>(i)] = w;
  }
  for (auto& op : net.ops)
    for (int& in : op->inputs) {
      auto it = widened.find(in);
      if (it != widened.end()) in = it->second;
    }
  // The casts read only constants: they go first, keeping the order valid.
  int count = static_cast<int>(casts.size());
  for (auto& op : net.ops) casts.push_back(std::move(op));
  net.ops = std::move(casts);
  return count;
}

}  // namespace kiln
