"""The typed entry (csrc/entry.cpp) that kernels.conv_transpose2d takes for plain eager calls: the same results,
autograd and errors as the op through torch.ops, and torch.ops itself wherever a __torch_function__ could apply."""

import pytest
import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

import kernels
from kernels import ops

OP = torch.ops.convt.conv_transpose2d.default


def test_entry_matches_torch_ops_bit_for_bit():
    torch.manual_seed(0)
    x, w = torch.randn(2, 6, 5, 7), torch.randn(6, 2, 3, 4)
    for args in ((1, 0, 0, 1, 1), (2, 1, 1, 3, 1), ((2, 3), (1, 0), (1, 2), 3, (2, 1))):
        s, p, op, g, d = args
        b = torch.randn(2 * g)
        ours = kernels.conv_transpose2d(x, w, b, s, p, op, g, d)
        boxed = OP(x, w, b, s, p, op, g, d)
        assert torch.equal(ours, boxed)
        torch.testing.assert_close(ours, F.conv_transpose2d(x, w, b, s, p, op, g, d), rtol=1e-5, atol=1e-5)


@pytest.fixture
def served(monkeypatch):
    """Whether each call of the typed entry served it (True) or declined to torch.ops (False): counting them proves
    which path ran, where an unchecked fast path would let a regression route every call back unnoticed."""
    seen = []

    def counted(*a, entry=ops._ENTRY):
        out = entry(*a)
        seen.append(out is not None)
        return out

    monkeypatch.setattr(ops, "_ENTRY", counted)
    return seen


def test_entry_is_the_path_plain_calls_take(served):
    x, w = torch.randn(1, 4, 3, 3), torch.nn.Parameter(torch.randn(4, 2, 3, 3))
    a = kernels.conv_transpose2d(x, w, None, 2, 1)
    b = kernels.conv_transpose2d(x, w, None, (2, 2), (1, 1), (0, 0), 1, (1, 1))
    assert served == [True, True] and torch.equal(a, b)
    c = kernels.conv_transpose2d(x, w, None, [2, 2], 1)  # a list: the entry declines, torch.ops parses it
    assert served == [True, True, False] and torch.equal(a, c)
    with pytest.raises(TypeError, match="stride"):  # a bool is no int to the entry, nor to torch
        kernels.conv_transpose2d(x, w, None, True)
    assert served[-1] is False


def test_entry_keeps_autograd_for_parameters():
    torch.manual_seed(1)
    x = torch.randn(2, 4, 5, 5, requires_grad=True)
    w = torch.nn.Parameter(torch.randn(4, 3, 3, 3))
    b = torch.nn.Parameter(torch.randn(3))
    kernels.conv_transpose2d(x, w, b, 2, 1, 1).square().sum().backward()
    grads = [t.grad.clone() for t in (x, w, b)]
    for t in (x, w, b):
        t.grad = None
    F.conv_transpose2d(x, w, b, 2, 1, 1).square().sum().backward()
    for ours, ref in zip(grads, (x.grad, w.grad, b.grad)):
        torch.testing.assert_close(ours, ref, rtol=1e-4, atol=1e-4)


def test_entry_on_meta_and_inference_mode():
    x, w = torch.empty(2, 4, 5, 6, device="meta"), torch.empty(4, 3, 3, 3, device="meta")
    assert kernels.conv_transpose2d(x, w, None, 2, 1, 1).shape == (2, 3, 10, 12)
    with torch.inference_mode():
        out = kernels.conv_transpose2d(torch.randn(1, 4, 3, 3), torch.randn(4, 2, 2, 2), None, 2)
    assert out.is_inference() and out.shape == (1, 2, 6, 6)


def test_errors_through_the_entry_are_torchs_kinds():
    x, w = torch.randn(2, 4, 5, 5), torch.randn(4, 3, 3, 3)
    for call, kind in ((lambda f: f(x, w, None, 0), RuntimeError),
                       (lambda f: f(torch.randn(2, 5, 5, 5), w), RuntimeError),
                       (lambda f: f(x, w, None, 1, -1), RuntimeError)):
        with pytest.raises(kind) as ref:
            call(F.conv_transpose2d)
        with pytest.raises(kind) as ours:
            call(kernels.conv_transpose2d)
        assert type(ours.value) is type(ref.value)
    assert kernels.conv_transpose2d(x, w).shape == (2, 3, 7, 7)  # and the entry still serves


class Logged(torch.Tensor):
    seen: list = []

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        cls.seen.append(func)
        return super().__torch_function__(func, types, args, kwargs or {})


def test_subclasses_and_modes_keep_torch_function():
    x, w = torch.randn(1, 4, 3, 3), torch.randn(4, 2, 3, 3)
    Logged.seen.clear()
    out = kernels.conv_transpose2d(x.as_subclass(Logged), w, None, 2)
    assert OP in Logged.seen and isinstance(out, Logged)

    class Mode(TorchFunctionMode):
        def __init__(self):
            super().__init__()
            self.seen = []

        def __torch_function__(self, func, types, args=(), kwargs=None):
            self.seen.append(func)
            return func(*args, **(kwargs or {}))

    with Mode() as mode:
        kernels.conv_transpose2d(x, w, None, 2)
    assert OP in mode.seen


def test_swapped_module_takes_the_entry(served):
    ref = torch.nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1, output_padding=1)
    ours = kernels.ConvTranspose2d.from_module(ref)
    x = torch.randn(2, 4, 5, 5)
    with torch.no_grad():
        torch.testing.assert_close(ours(x), ref(x), rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(ours(x, output_size=[10, 10]), ref(x, output_size=[10, 10]), rtol=1e-5, atol=1e-5)
    assert served == [True, True]  # output_size's list of paddings too
