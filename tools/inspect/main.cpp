#include <cstdio>
#include "kiln/interpreter.h"
int main(int argc, char** argv) {
  if (argc < 2) return 2;
  auto interp = kiln::Interpreter::createFromFile(argv[1]);
  if (!interp.ok()) { std::fprintf(stderr, "%s\n", interp.status().ToString().c_str()); return 1; }
  std::printf("ok\n");
  return 0;
}
