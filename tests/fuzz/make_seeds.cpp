// Writes valid models into DIR as the fuzzer's starting corpus.
#include <cstdio>

#include "support/test_models.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: kiln-fuzz-seeds DIR\n");
    return 2;
  }
  auto bytes = kiln::test::TinyCnn().finish();
  if (!bytes.ok()) return 1;
  kiln::test::WriteFile(std::string(argv[1]) + "/tiny_cnn.kiln", *bytes);
  return 0;
}
