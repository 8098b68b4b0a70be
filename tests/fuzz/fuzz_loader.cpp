// libFuzzer entry: any byte string given to the loader must either load or
// fail with a Status, never crash, read out of bounds or allocate unboundedly.
#include <cstddef>
#include <cstdint>

#include "kiln/format.h"
#include "kiln/interpreter.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto r = kiln::Interpreter::createFromBuffer(data, size);
  if (r.ok()) {
    // Touch what the engine trusts after verification.
    const kiln::fb::Net& net = (*r)->net();
    size_t sum = 0;
    if (net.ops())
      for (const kiln::fb::Op* op : *net.ops())
        if (op->inputs())
          for (int32_t t : *op->inputs())
            if (t >= 0) sum += net.tensors()->Get(static_cast<flatbuffers::uoffset_t>(t))->name()->size();
    // And inside control flow's subgraphs, each indexing its own tensors.
    if (net.subgraphs())
      for (const kiln::fb::SubGraph* g : *net.subgraphs())
        if (g->ops())
          for (const kiln::fb::Op* op : *g->ops())
            if (op->inputs())
              for (int32_t t : *op->inputs())
                if (t >= 0) sum += g->tensors()->Get(static_cast<flatbuffers::uoffset_t>(t))->name()->size();
    (void)sum;
  }
  return 0;
}
