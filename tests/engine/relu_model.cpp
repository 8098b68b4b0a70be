// Writes a Relu model with input x[n, c] for the C API check.
#include "kiln/net_builder.h"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  kiln::NetBuilder b("relu");
  int x = b.addInput("x", kiln::fb::DataType::F32, {"n", "c"});
  b.addOutput(b.addOp(kiln::fb::OpType::Relu, "relu", {x}, {"y"})[0]);
  return b.writeFile(argv[1]).ok() ? 0 : 1;
}
