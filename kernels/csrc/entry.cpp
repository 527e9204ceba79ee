// A typed Python entry to the op for the eager call. A call through torch.ops from Python parses its arguments
// against the schema into a boxed stack (~3 us of host time a call here, more on the H100's host, beside a batch-1
// layer's ~10 us of GPU time); this one converts them to their C++ types itself, and the dispatcher's typed call then
// runs every kernel the boxed call would (autograd, functorch, fake and meta tensors, the backends). Only
// __torch_function__ is left out: ops.py sends subclasses, torch-function modes and compiler tracing to torch.ops.
#include <torch/csrc/Exceptions.h>
#include <torch/extension.h>

#include <array>
#include <optional>

#include "op_handle.h"

namespace py = pybind11;

namespace {

using Pair = std::array<int64_t, 2>;

// An exact int that fits 64 bits (an overflow is left to torch.ops, which reports it).
bool as_int(PyObject* o, int64_t& out) {
  if (!PyLong_CheckExact(o)) return false;
  out = PyLong_AsLongLong(o);
  if (out == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  return true;
}

// An int, or a tuple of two ints (exactly: bool and int subclasses, lists and anything else are left to torch.ops,
// whose parse gives torch's errors and conversions).
bool as_pair(py::handle h, Pair& out) {
  PyObject* o = h.ptr();
  if (as_int(o, out[0])) {
    out[1] = out[0];
    return true;
  }
  return PyTuple_CheckExact(o) && PyTuple_GET_SIZE(o) == 2 && as_int(PyTuple_GET_ITEM(o, 0), out[0]) &&
         as_int(PyTuple_GET_ITEM(o, 1), out[1]);
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def(
      "conv_transpose2d",
      [](const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias, py::handle stride,
         py::handle padding, py::handle output_padding, int64_t groups, py::handle dilation) -> py::object {
        HANDLE_TH_ERRORS
        Pair s, p, op, d;
        if (!as_pair(stride, s) || !as_pair(padding, p) || !as_pair(output_padding, op) || !as_pair(dilation, d))
          return py::none();
        return py::cast(convt::conv_transpose2d_handle().call(input, weight, bias, s, p, op, groups, d));
        END_HANDLE_TH_ERRORS_PYBIND
      },
      "convt::conv_transpose2d by the dispatcher's typed call, or None where a pair argument is not an int or a "
      "tuple of two ints (the caller then takes torch.ops)");
}
