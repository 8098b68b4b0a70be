// Writes the models tests/python/test_kiln.py runs into DIR:
//   relu.kiln            x[n, c] f32 -> Relu -> y
//   add.kiln             a[n], b[n] f32 -> Add -> sum
//   chain.kiln           x[n] f32 -> Relu "relu" -> r -> Add "double" (r + r) -> y
//   identity_<dtype>.kiln  x[n] <dtype> -> Identity -> y, for each dtype below
#include <string>

#include "kiln/net_builder.h"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const std::string dir = argv[1];
  {
    kiln::NetBuilder b("relu");
    int x = b.addInput("x", kiln::fb::DataType::F32, {"n", "c"});
    b.addOutput(b.addOp(kiln::fb::OpType::Relu, "relu", {x}, {"y"})[0]);
    if (!b.writeFile(dir + "/relu.kiln").ok()) return 1;
  }
  {
    kiln::NetBuilder b("add");
    int a = b.addInput("a", kiln::fb::DataType::F32, {"n"});
    int c = b.addInput("b", kiln::fb::DataType::F32, {"n"});
    b.addOutput(b.addOp(kiln::fb::OpType::Add, "add", {a, c}, {"sum"})[0]);
    if (!b.writeFile(dir + "/add.kiln").ok()) return 1;
  }
  {
    kiln::NetBuilder b("chain");
    int x = b.addInput("x", kiln::fb::DataType::F32, {"n"});
    int r = b.addOp(kiln::fb::OpType::Relu, "relu", {x}, {"r"})[0];
    b.addOutput(b.addOp(kiln::fb::OpType::Add, "double", {r, r}, {"y"})[0]);
    if (!b.writeFile(dir + "/chain.kiln").ok()) return 1;
  }
  const std::pair<const char*, kiln::fb::DataType> dtypes[] = {
      {"f32", kiln::fb::DataType::F32}, {"f16", kiln::fb::DataType::F16}, {"i32", kiln::fb::DataType::I32},
      {"i64", kiln::fb::DataType::I64}, {"u8", kiln::fb::DataType::U8},   {"i8", kiln::fb::DataType::I8},
      {"bool", kiln::fb::DataType::BOOL}};
  for (auto& [name, dtype] : dtypes) {
    kiln::NetBuilder b(std::string("identity_") + name);
    int x = b.addInput("x", dtype, {"n"});
    int y = b.addTensor("y", dtype);
    b.addOpWithOutputs(kiln::fb::OpType::Identity, "identity", {x}, {y});
    b.addOutput(y);
    if (!b.writeFile(dir + "/identity_" + name + ".kiln").ok()) return 1;
  }
  return 0;
}
