// The C API's error channel, shared by c_api.cpp and the host-module
// runtime and loader (module_runtime.cpp, module_loader.cpp).
#pragma once

#include "kiln/kiln.h"
#include "kiln/status.h"

// Sets kiln_last_error() (this thread's) to `s`'s message and returns its
// C status code.
KilnStatus CApiFail(const kiln::Status& s);
