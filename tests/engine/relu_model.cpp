// Writes a model y = Relu(x + b) with input x[n, 3] and a weight b (zeros)
// for the C API check.
#include "kiln/net_builder.h"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  kiln::NetBuilder b("relu");
  int x = b.addInput("x", kiln::fb::DataType::F32, {"n", kiln::Dim(3)});
  int sum = b.addOp(kiln::fb::OpType::Add, "add", {x, b.addConstant("b", {3}, std::vector<float>{0, 0, 0})}, {"s"})[0];
  b.addOutput(b.addOp(kiln::fb::OpType::Relu, "relu", {sum}, {"y"})[0]);
  return b.writeFile(argv[1]).ok() ? 0 : 1;
}
