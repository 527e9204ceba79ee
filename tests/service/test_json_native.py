"""service.native against the pure-Python path it shortcuts.

Decoding: generated request bodies (every datatype, flat and nested data, number
spellings, whitespace, escaped keys, "data" in strings and parameters, malformed
numbers, literals, truncation, deep nesting) must give the same tensor, or the same
InvalidRequest message, whether parse_request lifts their arrays or not. Encoding:
every datatype reads back exactly."""

from __future__ import annotations

import itertools
import json
import math
import random
import struct

import numpy as np
import pytest
import torch

from service import codec, native
from service.errors import InvalidRequest

DATATYPES = sorted(codec.DATATYPES)
SPECIAL = [0.0, -0.0, 5e-324, 2.2250738585072014e-308, 1.1754943508222875e-38, 1e-45, 3.4028234663852886e38,
           1.7976931348623157e308, 65504.0, 6.1e-05, 0.1, 1 / 3, 2.0**53, 2.0**53 + 2, 123456789.0]
INTS = [0, 1, -1, 127, -128, 255, 256, 32767, -32768, 65535, 2**31 - 1, -(2**31), 2**32 - 1, 2**53, 2**53 + 1,
        2**63 - 1, -(2**63)]
BAD_NUMBERS = ["01", "1.", ".5", "+1", "1e", "-", "1e+", "--1", "0x10", "1_0", "NaN", "Infinity", "-Infinity", "nan",
               "1e400", "-1e400", "1e-400", str(2**63), str(-(2**63) - 1), str(2**64), "true", "null", '"1"']


def number(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.3:
        v = rng.choice(INTS) if rng.random() < 0.3 else rng.randint(-300, 300)
        return str(v)
    v = rng.choice(SPECIAL) if rng.random() < 0.3 else rng.gauss(0, 1) * 10.0 ** rng.randint(-40, 40)
    v = -v if rng.random() < 0.3 else v
    spelling = rng.randrange(5)
    if spelling == 0:
        return repr(v)
    if spelling == 1:
        return f"{v:.17g}"
    if spelling == 2:
        return f"{v:.9e}".replace("e", rng.choice(["e", "E"]))
    if spelling == 3:
        return repr(float(np.float32(v))) if abs(v) < 3e38 else repr(v)
    return f"{v:.3e}".replace("e+", rng.choice(["e", "e+", "E+"]))


def ws(rng: random.Random) -> str:
    return "".join(rng.choice(" \t\n\r") for _ in range(rng.choice([0, 0, 0, 1, 2])))


def nested(rng: random.Random, shape: list[int], leaf) -> str:
    if not shape:
        return leaf()
    items = [nested(rng, shape[1:], leaf) for _ in range(shape[0])]
    return "[" + ws(rng) + ("," + ws(rng)).join(items) + ws(rng) + "]"


def data_text(rng: random.Random, shape: list[int]) -> str:
    count = math.prod(shape)
    kind = rng.random()
    leaf = lambda: number(rng)  # noqa: E731
    if kind < 0.08:  # one bad token somewhere
        bad_at = rng.randrange(max(count, 1))
        tokens = itertools.count()
        leaf = lambda: rng.choice(BAD_NUMBERS) if next(tokens) == bad_at else number(rng)  # noqa: E731
    elif kind < 0.14:
        leaf = lambda: rng.choice(["true", "false"])  # noqa: E731
    elif kind < 0.18:
        return rng.choice(["[]", "[[]]", "[[], []]", "null", '"abc"', "1.5", "{}", '{"data": [1]}', "[1, [2]]",
                           "[[1, 2], [3]]", "[[1], 2]", "[" * 70 + "1" + "]" * 70])
    elif kind < 0.24:
        leaf = lambda: str(rng.choice(INTS))  # noqa: E731
    layout = shape if rng.random() < 0.5 else [count]
    if rng.random() < 0.1:  # a count that does not match the shape
        layout = [count + 1]
    return nested(rng, layout, leaf)


def key(rng: random.Random, name: str) -> str:
    if rng.random() < 0.15:  # spelled with escapes: the same key to a JSON parser
        return '"' + "".join(f"\\u{ord(c):04x}" if rng.random() < 0.5 else c for c in name) + '"'
    return json.dumps(name)


def body(rng: random.Random) -> bytes:
    inputs = []
    for i in range(rng.randint(1, 3)):
        shape = [rng.randint(1, 3) for _ in range(rng.randint(1, 3))]
        members = [(key(rng, "name"), json.dumps(rng.choice([f"x{i}", "na\"me", "é☃𝄞", "d\\ata"]), ensure_ascii=rng.random() < 0.5)),
                   (key(rng, "shape"), json.dumps(shape)),
                   (key(rng, "datatype"), json.dumps(rng.choice(DATATYPES)))]
        if rng.random() < 0.95:
            members.append((key(rng, "data"), data_text(rng, shape)))
        if rng.random() < 0.2:
            members.append(('"parameters"', rng.choice(['{"data": [1, 2]}', '{"binary_data_size": 4}', '{"x": "\\"data\\": [1]"}'])))
        if rng.random() < 0.03:
            members.append(('"data"', "[1]"))  # a duplicate key: the last one wins
        rng.shuffle(members)
        inputs.append("{" + ws(rng) + ("," + ws(rng)).join(f"{k}{ws(rng)}:{ws(rng)}{v}" for k, v in members) + ws(rng) + "}")
    top = [('"inputs"', "[" + ws(rng) + ("," + ws(rng)).join(inputs) + "]")]
    if rng.random() < 0.2:
        top.append(('"id"', json.dumps(rng.choice(['"data": [1, 2]', "\u2028", "a\\b"]))))
    if rng.random() < 0.02:
        top.append(('"inputs"', "[]"))
    rng.shuffle(top)
    text = ws(rng) + "{" + ",".join(f"{k}:{ws(rng)}{v}" for k, v in top) + "}" + ws(rng)
    raw = text.encode()
    cut = rng.random()
    if cut < 0.04:
        raw = raw[:rng.randrange(len(raw))]
    elif cut < 0.06:
        raw += b" x"
    return raw


def outcome(parse, raw: bytes):
    """The parse error, or per input its tensor or error message."""
    try:
        request = parse(raw)
    except InvalidRequest as exc:
        return ("parse", str(exc))
    results = []
    for inp in request.inputs:
        try:
            results.append(codec.decode_input(inp, None))
        except InvalidRequest as exc:
            results.append(str(exc))
    return ("inputs", results)


def same_tensor(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.is_floating_point():  # bits: -0.0 and NaN count
        bits = {2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
        return torch.equal(a.view(bits), b.view(bits))
    return torch.equal(a, b)


def same_values(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bit for bit, except that a NaN is a NaN: JSON has one, without payload."""
    nan = a.isnan()
    return torch.equal(nan, b.isnan()) and same_tensor(a[~nan], b[~nan])


def test_lifted_bodies_decode_as_the_python_path_does():
    rng = random.Random(6)
    lifted = 0
    for n in range(1500):
        raw = body(rng)
        got, want = outcome(codec.parse_request, raw), outcome(codec._validate, raw)
        assert got[0] == want[0], (n, raw, got, want)
        if got[0] == "parse":
            assert got[1] == want[1], (n, raw)
        else:
            assert len(got[1]) == len(want[1])
            for g, w in zip(got[1], want[1]):
                assert type(g) is type(w) and (g == w if isinstance(g, str) else same_tensor(g, w)), (n, raw, g, w)
        found = native.lift(raw)
        lifted += found is not None
        # split in many shares, every flat array checked from its commas on by several threads: the same verdict
        assert same_lift(native.lift(raw, grain=1), found), (n, raw)
    assert lifted > 600  # the generator must exercise the lifted path, not only the fallback


def same_lift(a, b) -> bool:
    if a is None or b is None:
        return a is b
    return a[0] == b[0] and [(i, x.dtype, x.shape, x.tobytes()) for i, x in a[1]] == \
        [(i, x.dtype, x.shape, x.tobytes()) for i, x in b[1]]


SERIAL = 1 << 60  # a grain no array reaches: one share, the scanner's own walk


def test_a_large_flat_array_lifts_the_same_in_shares_as_in_one_walk():
    rng = random.Random(11)
    seps = [",", ", ", " ,", "\n,\t", ",\r\n  "]
    lifted = 0
    for n in range(300):
        count = rng.choice([2, 3, 17, 500, 3000])
        tokens = [number(rng) if rng.random() < 0.8 else str(rng.choice(INTS)) for _ in range(count)]
        if rng.random() < 0.5:
            tokens = [str(rng.randint(-9, 9)) for _ in range(count)]  # int64: every share's integers
        seps_here = [rng.choice(seps) for _ in range(count - 1)]
        fault = rng.random()
        if fault < 0.3:  # a flaw anywhere, share boundaries included: neither path may lift it
            at = rng.randrange(count - 1)
            seps_here[at] = rng.choice([",,", " ", "", ", ,", "]", "[", ",]", "\x00", ",\"a\","])
        elif fault < 0.4:
            tokens[rng.randrange(count)] = rng.choice(BAD_NUMBERS)
        text = "[" + ws(rng) + "".join(t + s for t, s in zip(tokens, seps_here + [""])) + ws(rng) + "]"
        if fault > 0.95:
            text = text[:-1] + rng.choice([",]", " , ]", "]]", ""])
        raw = ('{"inputs": [{"name": "x", "shape": [%d], "datatype": "FP64", "data": %s}]}' % (count, text)).encode()
        serial = native.lift(raw, grain=SERIAL)
        for grain in (1, 2, 7, 100):
            assert same_lift(native.lift(raw, grain=grain), serial), (n, grain, text[:200])
        lifted += serial is not None
    assert lifted > 100  # most are valid: the shares' own path is what is compared, not only the fallback


@pytest.mark.parametrize("text", [
    '{"inputs": [{"data": [1, NaN]}]}', '{"inputs": [{"data": [1e400]}]}', '{"inputs": [{"data": [1e-400]}]}',
    f'{{"inputs": [{{"data": [{2**63}]}}]}}', '{"inputs": [{"data": [1.5, 18446744073709551615]}]}',
    '{"inputs": [{"data": [1], "data": [2]}]}', '{"inputs": [{"data": [1]}], "inputs": []}',
    '{"inputs": [{"data": [01]}]}', '{"inputs": [{"data": [1.]}]}', '{"inputs": [{"data": [1]}]} x',
    '{"inputs": [{"data": [1]}], "id": "\\ud800"}', '{"inputs": [{"data": [1]}], "id": "\\udc00\\ud800"}',
    '{"inputs": [{"data": [1]}], "id": "a\tb"}', '{"inputs": [{"data": [[1], [2, 3]]}]}',
    '{"inputs": [{"data": []}]}', '{"inputs": [{"data": [true]}]}', '[{"inputs": [{"data": [1]}]}]',
    '{"inputs": [{"data": [1]}], "p": ' + "[" * 64 + "]" * 64 + "}",
])
def test_not_lifted(text):
    assert native.lift(text.encode()) is None


def test_not_lifted_invalid_utf8():
    for bad in (b"\xff", b"\xc0\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82"):
        assert native.lift(b'{"id": "' + bad + b'", "inputs": [{"data": [1]}]}') is None
    assert native.lift('{"id": "é☃𝄞", "inputs": [{"data": [1]}]}'.encode()) is not None


def test_lifted_only_at_inputs_data():
    text = ('{"id": "\\"data\\": [9]", "parameters": {"data": [7]}, "inputs": [{"parameters": {"data": [8]}, '
            '"d\\u0061ta" : [ [1, 2.5] , [3e2, -0] ] }, 5, {"data": [4]}]}')
    small, arrays = native.lift(text.encode())
    assert small == text.replace("[ [1, 2.5] , [3e2, -0] ]", "null").replace("[4]", "null").encode()
    (i0, a0), (i2, a2) = arrays
    assert (i0, a0.dtype, a0.tolist()) == (0, np.float64, [[1.0, 2.5], [300.0, 0.0]])
    assert (i2, a2.dtype, a2.tolist()) == (2, np.int64, [4])


def test_large_body_decodes_exactly():
    x = np.random.default_rng(0).standard_normal(300_000).astype(np.float32)
    raw = json.dumps({"inputs": [{"name": "x", "shape": [3, 100_000], "datatype": "FP32",
                                  "data": x.reshape(3, -1).tolist()}]}).encode()
    request = codec.parse_request(raw)
    assert isinstance(request.inputs[0].data, np.ndarray)  # lifted
    assert torch.equal(codec.decode_input(request.inputs[0], None), torch.from_numpy(x).reshape(3, -1))


def random_tensor(datatype: str, n: int, gen: torch.Generator) -> torch.Tensor:
    dtype = codec.DATATYPES[datatype].torch
    if dtype == torch.bool:
        return torch.randint(0, 2, (n,), generator=gen).bool()
    if dtype.is_floating_point:
        bits = torch.randint(-(2**31), 2**31, (n,), generator=gen, dtype=torch.int64)
        x = bits.to(torch.int32).view(torch.float32).to(torch.float64)  # every exponent, subnormals too
        if dtype == torch.float64:
            x = x * torch.randn(n, generator=gen, dtype=torch.float64)
        x[:4] = torch.tensor([float("nan"), float("inf"), -float("inf"), -0.0], dtype=torch.float64)
        return x.to(dtype)
    info = torch.iinfo(dtype)
    lo, hi = max(info.min, -(2**63)), min(info.max, 2**63 - 1)
    x = torch.randint(lo, hi, (n,), generator=gen, dtype=torch.int64)
    if dtype == torch.uint64:
        return torch.tensor([0, 2**64 - 1, 2**63, *x.abs().tolist()[3:]], dtype=torch.uint64)
    return torch.cat([torch.tensor([info.min, info.max]), x[2:]]).to(dtype)


@pytest.mark.parametrize("datatype", DATATYPES)
def test_encoded_values_read_back_exactly(datatype):
    t = random_tensor(datatype, 5000, torch.Generator().manual_seed(len(datatype)))
    body, _ = codec.encode_response({"model_name": "m"}, [("out", t.reshape(50, 100), False)])
    out = json.loads(body)["outputs"][0]
    assert out["shape"] == [50, 100] and out["datatype"] == datatype
    if t.is_floating_point():
        assert all(type(v) is float for v in out["data"])
        back = torch.tensor(out["data"], dtype=torch.float64)
        if t.dtype != torch.float64:
            back = back.float()  # the text is the float32 value's: read as double, then float32
        assert same_values(back.to(t.dtype), t)
    else:
        assert out["data"] == t.tolist() and [type(v) for v in out["data"][:3]] == [type(v) for v in t.tolist()[:3]]
    assert native.dump(t, grain=1) == native.dump(t)


def test_float32_text_is_the_shortest():
    body, _ = codec.encode_response({"model_name": "m"}, [("o", torch.tensor([0.1, 1.0, 1e16, -0.0, 3e-38]), False)])
    assert b'"data":[0.1,1.0,1e+16,-0.0,3e-38]}' in body
    f32 = np.frombuffer(np.random.default_rng(1).integers(0, 2**32, 200_000, dtype=np.uint32).tobytes(), np.float32)
    f32 = f32[np.isfinite(f32)]
    text = native.dump(torch.from_numpy(f32.copy()))
    back = np.array(json.loads(text), dtype=np.float64).astype(np.float32)
    assert back.tobytes() == f32.tobytes()
    assert all(len(s) <= len(repr(float(v))) for s, v in zip(text[1:-1].split(b","), f32[:2000]))


def test_response_schema_unchanged():
    t = torch.arange(6, dtype=torch.int32).reshape(2, 3)
    body, length = codec.encode_response({"model_name": "m", "model_version": "1", "id": "r\"1"},
                                         [("a", t, False), ("b", t, True), ("c", t.float(), False)])
    head = json.loads(body[:length])
    assert head == {"model_name": "m", "model_version": "1", "id": "r\"1", "outputs": [
        {"name": "a", "shape": [2, 3], "datatype": "INT32", "data": [0, 1, 2, 3, 4, 5]},
        {"name": "b", "shape": [2, 3], "datatype": "INT32", "parameters": {"binary_data_size": 24}},
        {"name": "c", "shape": [2, 3], "datatype": "FP32", "data": [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]}]}
    assert bytes(body[length:]) == t.numpy().tobytes()
    assert struct.unpack("<6i", body[length:]) == tuple(range(6))
