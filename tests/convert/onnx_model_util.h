// Writing ONNX models in tests with the protobuf classes: a model of one
// opset and graph "g", and a node with its inputs and outputs.
#pragma once

#include <string>
#include <vector>

#include "onnx/onnx.pb.h"

namespace kiln::test {

inline onnx::ModelProto NewOnnxModel(int opset) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(opset);
  m.mutable_graph()->set_name("g");
  return m;
}

inline onnx::NodeProto* AddOnnxNode(onnx::GraphProto* g, const std::string& type, std::vector<std::string> in,
                                    std::vector<std::string> out, const std::string& name = "") {
  auto* n = g->add_node();
  n->set_op_type(type);
  n->set_name(name);
  for (auto& i : in) n->add_input(i);
  for (auto& o : out) n->add_output(o);
  return n;
}

}  // namespace kiln::test
