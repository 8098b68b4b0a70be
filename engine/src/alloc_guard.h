// GuardAlloc: runs a library entry point, turning std::bad_alloc thrown by a
// container deep inside it (the host running out of memory) into an
// OutOfMemory status, so that no allocation failure reaches the app as an
// exception or a crash. The sizes themselves are bounded before anything is
// allocated (checked_math.h, the session's limits): this catches what is
// left, a machine that is short of memory.
#pragma once

#include <new>

#include "kiln/status.h"

namespace kiln {

template <typename F>
auto GuardAlloc(const char* what, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return OutOfMemory("%s: out of host memory", what);
  }
}

}  // namespace kiln
