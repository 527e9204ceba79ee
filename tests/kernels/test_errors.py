"""Invalid calls raise the kind of error torch raises, with a message that says why."""

import pytest
import torch
import torch.nn.functional as F

import kernels
from kernels.ops import conv_transpose2d_out

X = torch.randn(2, 4, 5, 5)
W = torch.randn(4, 3, 3, 3)

CASES = {
    "5-d input": (lambda f: f(X[None], W), RuntimeError, "Expected 3D"),
    "2-d input": (lambda f: f(X[0, 0], W), RuntimeError, "Expected 3D"),
    "channel mismatch": (lambda f: f(torch.randn(2, 5, 5, 5), W), RuntimeError, "channels"),
    "groups do not divide": (lambda f: f(X, W, groups=3), RuntimeError, "divisible by 3"),
    "output_padding too big": (lambda f: f(X, W, stride=2, output_padding=2), RuntimeError, "output padding must be smaller"),
    "output_padding too big (one axis)": (lambda f: f(X, W, stride=(2, 3), dilation=(1, 1), output_padding=(0, 3)), RuntimeError, "output padding must be smaller"),
    "input/weight dtype": (lambda f: f(X.double(), W), RuntimeError, "type"),
    "bias dtype": (lambda f: f(X, W, torch.randn(3).double()), RuntimeError, "bias"),
    "bias size": (lambda f: f(X, W, torch.randn(4)), RuntimeError, "bias"),
    "negative padding": (lambda f: f(X, W, padding=-1), RuntimeError, "negative padding"),
    "zero stride": (lambda f: f(X, W, stride=0), RuntimeError, "non-positive stride"),
    "zero groups": (lambda f: f(X, W, groups=0), RuntimeError, "non-positive groups"),
    "3-d weight": (lambda f: f(X, W[0]), RuntimeError, "4D weight"),
    "stride of 3 values": (lambda f: f(X, W, stride=(1, 2, 3)), RuntimeError, "stride"),
    "stride of wrong type": (lambda f: f(X, W, stride="a"), TypeError, "stride"),
    "output too small": (lambda f: f(torch.randn(1, 4, 1, 1), W, padding=2), RuntimeError, "too small"),
    "empty spatial input": (lambda f: f(torch.randn(1, 4, 0, 5), W), RuntimeError, "zero batch or zero channel"),
    # no kernel sees a group of no input channels: each assumes at least one chunk of them
    "zero-channel input": (lambda f: f(torch.randn(1, 0, 4, 4), torch.randn(0, 3, 2, 2)), RuntimeError, "at least 1 at dimension 0"),
    "groups of wrong type": (lambda f: f(X, W, groups=1.5), TypeError, "groups"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_error_kind_matches_torch(name):
    call, kind, text = CASES[name]
    with pytest.raises(kind) as torch_err:
        call(F.conv_transpose2d)
    with pytest.raises(kind, match=text) as ours:
        call(kernels.conv_transpose2d)
    assert type(ours.value) is type(torch_err.value)


def test_unsupported_dtype():
    with pytest.raises(RuntimeError, match="unsupported dtype"):
        kernels.conv_transpose2d(X.long(), W.long())
    with pytest.raises(RuntimeError, match="unsupported dtype"):
        kernels.conv_transpose2d(X.to(torch.complex64), W.to(torch.complex64))


def test_dilation_zero_is_refused():
    # torch's CPU path dies inside oneDNN here; ours says what is wrong
    with pytest.raises(RuntimeError, match="dilation should be greater than zero"):
        kernels.conv_transpose2d(X, W, dilation=0)


def test_out_variant_checks_its_buffer():
    with pytest.raises(RuntimeError, match="out has size"):
        conv_transpose2d_out(X, W, out=torch.empty(2, 3, 6, 6))
    with pytest.raises(RuntimeError, match="dtype"):
        conv_transpose2d_out(X, W, out=torch.empty(2, 3, 7, 7, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="contiguous"):
        conv_transpose2d_out(X, W, out=torch.empty(2, 3, 7, 7).transpose(2, 3))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_device_mismatch():
    with pytest.raises(RuntimeError, match="device"):
        kernels.conv_transpose2d(X.cuda(), W)
    with pytest.raises(RuntimeError, match="device"):
        kernels.conv_transpose2d(X, W.cuda())
    with pytest.raises(RuntimeError, match="device"):
        kernels.conv_transpose2d(X.cuda(), W.cuda(), torch.randn(3))


def test_errors_leave_the_op_usable():
    for call, kind, _ in CASES.values():
        with pytest.raises(kind):
            call(kernels.conv_transpose2d)
    torch.testing.assert_close(kernels.conv_transpose2d(X, W), F.conv_transpose2d(X, W), rtol=1e-5, atol=1e-5)
