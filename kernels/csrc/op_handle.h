// The op's typed dispatcher handle, looked up once: the autograd kernel's redispatch (op.cpp) and the typed Python
// entry (entry.cpp) both call through it.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include <optional>

namespace convt {

using ConvT2dSig = at::Tensor(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&, c10::IntArrayRef,
                              c10::IntArrayRef, c10::IntArrayRef, int64_t, c10::IntArrayRef);

inline const c10::TypedOperatorHandle<ConvT2dSig>& conv_transpose2d_handle() {
  static const auto op =
      c10::Dispatcher::singleton().findSchemaOrThrow("convt::conv_transpose2d", "").typed<ConvT2dSig>();
  return op;
}

}  // namespace convt
