// Writes a model whose module needs every kind of tensor place: x[n, 6]
// (n symbolic: kiln-compile --input-shape fixes it), y = Reshape(Relu(x),
// Shape(x)) (the shape a value computed at compile time), and outputs y,
// Shape(x) (a value no step writes) and x itself (an input passed through).
#include "kiln/net_builder.h"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  kiln::NetBuilder b("module_places");
  int x = b.addInput("x", kiln::fb::DataType::F32, {"n", kiln::Dim(6)});
  int r = b.addOp(kiln::fb::OpType::Relu, "relu", {x}, {"r"})[0];
  int shape = b.addOp(kiln::fb::OpType::Shape, "shape", {x}, {"shape"})[0];
  int y = b.addOp(kiln::fb::OpType::Reshape, "reshape", {r, shape}, {"y"})[0];
  b.addOutput(y);
  b.addOutput(shape);
  b.addOutput(x);
  return b.writeFile(argv[1]).ok() ? 0 : 1;
}
