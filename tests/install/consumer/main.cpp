// An app of the installed Kiln package (tests/install/consumer_test.sh builds
// it through find_package(kiln) and through pkg-config): only the installed
// headers, the C++ API. Loads argv[1], the Relu model that relu_model writes
// (tests/engine/relu_model.cpp: y = relu(x), x[n, c]), runs it on the host
// backend at [2, 3] and checks y.
#include <kiln/interpreter.h>
#include <kiln/tensor.h>
#include <kiln/types.h>

#include <cstdio>
#include <vector>

static int Fail(const char* what, const kiln::Status& status) {
  std::fprintf(stderr, "consumer: %s: %s\n", what, status.ToString().c_str());
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s relu.kiln\n", argv[0]);
    return 2;
  }
  auto interp = kiln::Interpreter::createFromFile(argv[1]);
  if (!interp.ok()) return Fail("load", interp.status());
  kiln::Interpreter& net = **interp;

  kiln::ScheduleConfig config;
  config.type = kiln::ForwardType::kHost;
  auto session = net.createSession(config);
  if (!session.ok()) return Fail("createSession", session.status());

  kiln::Tensor* x = net.getSessionInput(*session, "x");
  if (x == nullptr || x->dtype() != kiln::dtype::kF32) {
    std::fprintf(stderr, "consumer: no f32 input x\n");
    return 1;
  }
  kiln::Status st = net.resizeTensor(x, {2, 3});
  if (!st.ok()) return Fail("resizeTensor", st);
  st = net.resizeSession(*session);
  if (!st.ok()) return Fail("resizeSession", st);

  std::vector<float> in = {-2.0f, -1.0f, 0.0f, 0.5f, 1.5f, -0.25f};
  auto host_in = kiln::Tensor::wrap({2, 3}, kiln::dtype::kF32, in.data());
  st = x->copyFromHostTensor(*host_in);
  if (!st.ok()) return Fail("copyFromHostTensor", st);
  st = net.runSession(*session);
  if (!st.ok()) return Fail("runSession", st);

  kiln::Tensor* y = net.getSessionOutput(*session, "y");
  if (y == nullptr || y->dtype() != kiln::dtype::kF32 || y->shape() != std::vector<int64_t>{2, 3}) {
    std::fprintf(stderr, "consumer: no f32 output y of shape [2, 3]\n");
    return 1;
  }
  auto host_out = kiln::Tensor::create({2, 3}, kiln::dtype::kF32);
  st = y->copyToHostTensor(host_out.get());
  if (!st.ok()) return Fail("copyToHostTensor", st);

  const float expected[] = {0.0f, 0.0f, 0.0f, 0.5f, 1.5f, 0.0f};
  const float* out = host_out->host<float>();
  std::printf("y (%s) =", kiln::DataTypeName(y->dtype()));
  bool same = true;
  for (int i = 0; i < 6; ++i) {
    std::printf(" %g", out[i]);
    same = same && out[i] == expected[i];
  }
  std::printf("\n");
  if (!same) {
    std::fprintf(stderr, "consumer: expected y = 0 0 0 0.5 1.5 0\n");
    return 1;
  }
  st = net.releaseSession(*session);
  if (!st.ok()) return Fail("releaseSession", st);
  std::printf("consumer: ok\n");
  return 0;
}
