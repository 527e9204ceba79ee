// The two JSON steps where Python built one object per tensor value: reading the
// number arrays of a request's inputs[i].data, and printing a tensor as a JSON
// array. The contract (what is lifted, what falls back) is in __init__.py.
//
// The scanner accepts a strict subset of what pydantic-core's parser accepts and
// answers "not understood" (None) for everything else, so the pure-Python path
// keeps every verdict and error message. It never throws: each step returns false.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <system_error>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace py = pybind11;

namespace {

// pydantic-core refuses nesting past ~200; staying far below means a body we
// lift never gets past a limit that the original would have hit.
constexpr int kMaxDepth = 64;

constexpr uint64_t kIntegral = uint64_t{1} << 63;

struct Lifted {
  size_t input = 0;             // index in "inputs"
  size_t begin = 0, end = 0;    // the array's bytes in the header
  std::vector<int64_t> shape;
  std::vector<uint64_t> tokens; // each number's offset in the header, | kIntegral for one without '.' or exponent
  bool is_float = false;        // np.asarray's dtype: int64 while every number is an integer
  std::vector<int64_t> ints;
  std::vector<double> floats;
};

// Runs body(begin, end) over [0, n) in up to 8 threads of at least `grain` items
// each (the caller's thread takes the first share); true if every share returned true.
template <class F>
bool parallel(size_t n, size_t grain, F&& body) {
  size_t threads = std::min<size_t>({std::max(1u, std::thread::hardware_concurrency()), 8, n / std::max<size_t>(grain, 1)});
  if (threads <= 1) return body(size_t{0}, n);
  std::vector<char> ok(threads, 0);
  std::vector<std::thread> pool;
  pool.reserve(threads);
  auto share = [&](size_t t) { ok[t] = body(n * t / threads, n * (t + 1) / threads); };
  for (size_t t = 1; t < threads; ++t) {
    try {
      pool.emplace_back(share, t);
    } catch (const std::system_error&) {  // no thread to be had: this share runs here
      share(t);
    }
  }
  share(0);
  for (auto& th : pool) th.join();
  return std::all_of(ok.begin(), ok.end(), [](char c) { return c != 0; });
}

inline bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

inline const char* skip_ws(const char* p, const char* e) {
  while (p < e && is_ws(*p)) ++p;
  return p;
}

// Past the run of ASCII digits at p, eight bytes at a time: float data is mostly
// long digit runs ("0.10000000149011612"), and a byte loop was most of the scan.
inline const char* skip_digits(const char* p, const char* e) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  constexpr uint64_t kHigh = 0xF0F0F0F0F0F0F0F0ull;
  while (e - p >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    // a byte is '0'..'9' iff its high nibble is 3, and still 3 after adding 6; a carry out of
    // a byte >= 0xFA only reaches later bytes, past the first non-digit that the ctz finds
    uint64_t t = (w & kHigh) | (((w + 0x0606060606060606ull) & kHigh) >> 4);
    uint64_t other = t ^ 0x3333333333333333ull;
    if (other != 0) return p + (__builtin_ctzll(other) >> 3);
    p += 8;
  }
#endif
  while (p < e && static_cast<unsigned char>(*p - '0') <= 9) ++p;
  return p;
}

// RFC 8259's number at p, nothing else: no NaN/Infinity, leading '+', '01', '1.', '.5', '1e'.
// Past its end, or nullptr when there is none there.
inline const char* scan_number(const char* p, const char* const e, bool& integral) {
  auto digits = [&] {
    const char* b = p;
    p = skip_digits(p, e);
    return p > b;
  };
  integral = true;
  if (p < e && *p == '-') ++p;
  if (p >= e) return nullptr;
  if (*p == '0') {
    ++p;
  } else if (!(*p >= '1' && *p <= '9') || !digits()) {
    return nullptr;
  }
  if (p < e && *p == '.') {
    integral = false;
    ++p;
    if (!digits()) return nullptr;
  }
  if (p < e && (*p == 'e' || *p == 'E')) {
    integral = false;
    ++p;
    if (p < e && (*p == '+' || *p == '-')) ++p;
    if (!digits()) return nullptr;
  }
  return p;
}

// One share of a flat array's elements, [b, e): numbers separated by commas, whitespace around them;
// each number's offset from s (| kIntegral for an integer) appended to tokens.
bool flat_share(const char* s, const char* b, const char* e, std::vector<uint64_t>& tokens, bool& is_float) {
  tokens.reserve(static_cast<size_t>(e - b) / 8);
  for (const char* p = b;;) {
    p = skip_ws(p, e);
    bool integral;
    const char* past = scan_number(p, e, integral);
    if (past == nullptr) return false;
    tokens.push_back(static_cast<uint64_t>(p - s) | (integral ? kIntegral : 0));
    is_float |= !integral;
    p = skip_ws(past, e);
    if (p == e) return true;
    if (*p != ',') return false;
    ++p;
  }
}

class Scanner {
 public:
  Scanner(const char* data, size_t size, size_t grain) : s_(data), p_(data), end_(data + size), grain_(grain) {}

  bool run(std::vector<Lifted>& out) {
    ws();
    if (p_ >= end_ || *p_ != '{') return false;
    ++p_;
    int inputs_seen = 0;
    bool ok = members<true>(1, [&](const std::string& key) {
      if (key != "inputs") return value(1);
      // pydantic keeps the last of duplicate keys; which arrays it would see is not worth guessing
      if (++inputs_seen > 1) return false;
      return inputs(out);
    });
    if (!ok) return false;
    ws();
    return p_ == end_;
  }

 private:
  const char* s_;
  const char* p_;
  const char* end_;
  size_t grain_;  // values per share of a flat array's scan: at most one share per grain * kMinBytes bytes

  void ws() { p_ = skip_ws(p_, end_); }

  // p_ just after '{'; on_member(key) parses the member's value
  template <bool DecodeKeys, class F>
  bool members(int depth, F&& on_member) {
    if (depth > kMaxDepth) return false;
    ws();
    if (p_ < end_ && *p_ == '}') return ++p_, true;
    std::string key;
    for (;;) {
      ws();
      if (p_ >= end_ || *p_ != '"') return false;
      ++p_;
      key.clear();
      if (!string(DecodeKeys ? &key : nullptr)) return false;
      ws();
      if (p_ >= end_ || *p_ != ':') return false;
      ++p_;
      ws();
      if (!on_member(key)) return false;
      ws();
      if (p_ >= end_) return false;
      if (*p_ == ',') { ++p_; continue; }
      if (*p_ == '}') return ++p_, true;
      return false;
    }
  }

  // p_ just after '['; on_element(index) parses the element
  template <class F>
  bool elements(int depth, F&& on_element) {
    if (depth > kMaxDepth) return false;
    ws();
    if (p_ < end_ && *p_ == ']') return ++p_, true;
    for (size_t i = 0;; ++i) {
      ws();
      if (!on_element(i)) return false;
      ws();
      if (p_ >= end_) return false;
      if (*p_ == ',') { ++p_; continue; }
      if (*p_ == ']') return ++p_, true;
      return false;
    }
  }

  bool inputs(std::vector<Lifted>& out) {
    if (p_ >= end_ || *p_ != '[') return value(1);
    ++p_;
    return elements(2, [&](size_t i) {
      if (p_ >= end_ || *p_ != '{') return value(2);
      ++p_;
      int data_seen = 0;
      return members<true>(3, [&](const std::string& key) {
        if (key != "data") return value(3);
        if (++data_seen > 1) return false;
        if (p_ >= end_ || *p_ != '[') return value(3);
        const char* start = p_;
        Lifted a;
        a.input = i;
        a.begin = static_cast<size_t>(p_ - s_);
        if (lift(a, 3)) {
          a.end = static_cast<size_t>(p_ - s_);
          out.push_back(std::move(a));
          return true;
        }
        p_ = start;  // not numbers only, or not regular: left in place for the Python path
        return value(3);
      });
    });
  }

  // depth: the containers around this value
  bool value(int depth) {
    if (p_ >= end_) return false;
    switch (*p_) {
      case '{': ++p_; return members<false>(depth + 1, [&](const std::string&) { return value(depth + 1); });
      case '[': ++p_; return elements(depth + 1, [&](size_t) { return value(depth + 1); });
      case '"': ++p_; return string(nullptr);
      case 't': return word("true");
      case 'f': return word("false");
      case 'n': return word("null");
      default: {
        bool integral;
        return number(integral);
      }
    }
  }

  bool word(const char* w) {
    size_t n = std::strlen(w);
    if (static_cast<size_t>(end_ - p_) < n || std::memcmp(p_, w, n) != 0) return false;
    p_ += n;
    return true;
  }

  bool number(bool& integral) {
    const char* p = scan_number(p_, end_, integral);
    if (p == nullptr) return false;
    p_ = p;
    return true;
  }

  bool hex4(unsigned& cp) {
    if (end_ - p_ < 4) return false;
    cp = 0;
    for (int k = 0; k < 4; ++k) {
      char c = *p_++;
      unsigned d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                 : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : 16;
      if (d == 16) return false;
      cp = cp * 16 + d;
    }
    return true;
  }

  static void put_utf8(std::string& s, unsigned cp) {
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else if (cp < 0x800) {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      s += static_cast<char>(0xE0 | (cp >> 12));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      s += static_cast<char>(0xF0 | (cp >> 18));
      s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  // The length of the well-formed UTF-8 sequence at p_ (RFC 3629: no overlongs,
  // no surrogates, nothing past U+10FFFF), 0 if it is not one.
  size_t utf8_length() const {
    auto b = [&](ptrdiff_t k) { return static_cast<unsigned char>(p_[k]); };
    ptrdiff_t left = end_ - p_;
    unsigned c = b(0);
    auto cont = [&](ptrdiff_t k, unsigned lo = 0x80, unsigned hi = 0xBF) { return k < left && b(k) >= lo && b(k) <= hi; };
    if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
    if (c == 0xE0) return cont(1, 0xA0) && cont(2) ? 3 : 0;
    if (c == 0xED) return cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0;
    if (c >= 0xE1 && c <= 0xEF) return cont(1) && cont(2) ? 3 : 0;
    if (c == 0xF0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
    if (c >= 0xF1 && c <= 0xF3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
    if (c == 0xF4) return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0;
    return 0;
  }

  // p_ just after the opening quote; the decoded text goes to out when given
  bool string(std::string* out) {
    while (p_ < end_) {
      unsigned char c = static_cast<unsigned char>(*p_);
      if (c == '"') return ++p_, true;
      if (c < 0x20) return false;
      if (c < 0x80 && c != '\\') {
        if (out) *out += static_cast<char>(c);
        ++p_;
        continue;
      }
      if (c >= 0x80) {
        size_t n = utf8_length();
        if (n == 0) return false;
        if (out) out->append(p_, n);
        p_ += n;
        continue;
      }
      if (++p_ >= end_) return false;
      char e = *p_++;
      unsigned cp;
      switch (e) {
        case '"': cp = '"'; break;
        case '\\': cp = '\\'; break;
        case '/': cp = '/'; break;
        case 'b': cp = '\b'; break;
        case 'f': cp = '\f'; break;
        case 'n': cp = '\n'; break;
        case 'r': cp = '\r'; break;
        case 't': cp = '\t'; break;
        case 'u': {
          if (!hex4(cp)) return false;
          if (cp >= 0xDC00 && cp <= 0xDFFF) return false;  // a trailing surrogate alone
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            unsigned lo;
            if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return false;
            p_ += 2;
            if (!hex4(lo) || lo < 0xDC00 || lo > 0xDFFF) return false;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          break;
        }
        default: return false;
      }
      if (out) put_utf8(*out, cp);
    }
    return false;
  }

  // p_ at the '[' of a data array. True: a regular nest of numbers only, now in a
  // (what np.asarray would make of it); false: anything else, p_ anywhere.
  bool lift(Lifted& a, int depth) {
    int nd = 0;
    for (const char* q = p_; q < end_ && *q == '[';) {
      ++nd;
      q = skip_ws(q + 1, end_);
    }
    if (depth + nd > kMaxDepth) return false;
    if (nd == 1 && flat(a)) return true;
    a.shape.assign(nd, -1);
    ++p_;
    return level(a, 0, nd);
  }

  // p_ at the '[' of a flat array (the usual "data"). A large one is split at commas into shares that
  // threads check and locate the numbers of at once; the bytes between one share and the next are
  // exactly one comma, so the shares together are the array's elements. True: lifted as level() would
  // have, p_ past it; false: too small to split, or not numbers only (level() then finds out which).
  bool flat(Lifted& a) {
    constexpr size_t kMinBytes = 4;  // "1,2," is the densest text: no share is smaller than grain values
    constexpr size_t kMaxShares = 64;
    const char* open = p_;
    const char* close = static_cast<const char*>(std::memchr(open + 1, ']', static_cast<size_t>(end_ - open - 1)));
    if (close == nullptr) return false;  // no ']' can be in a number: the first one ends a flat array of them
    const size_t len = static_cast<size_t>(close - open - 1);
    const size_t shares = std::min(kMaxShares, len / (std::max<size_t>(grain_, 1) * kMinBytes));
    if (shares < 2) return false;
    std::vector<const char*> cut(shares + 1);  // the separator before each share; close after the last
    cut[0] = open;
    cut[shares] = close;
    for (size_t t = 1; t < shares; ++t) {
      const char* from = open + 1 + len * t / shares;
      if (from <= cut[t - 1]) {  // the last share's comma is past here: this share is empty
        cut[t] = cut[t - 1];
        continue;
      }
      const void* comma = std::memchr(from, ',', static_cast<size_t>(close - from));
      cut[t] = comma != nullptr ? static_cast<const char*>(comma) : close;
    }
    std::vector<std::vector<uint64_t>> tokens(shares);
    std::vector<char> floats(shares, 0);
    const char* const s = s_;
    bool ok = parallel(shares, 1, [&](size_t lo, size_t hi) {
      for (size_t t = lo; t < hi; ++t) {
        if (cut[t] == cut[t + 1]) continue;
        bool f = false;
        if (!flat_share(s, cut[t] + 1, cut[t + 1], tokens[t], f)) return false;
        floats[t] = f;
      }
      return true;
    });
    if (!ok) return false;
    std::vector<size_t> at(shares + 1, 0);
    for (size_t t = 0; t < shares; ++t) at[t + 1] = at[t] + tokens[t].size();
    a.tokens.resize(at[shares]);
    parallel(shares, 1, [&](size_t lo, size_t hi) {
      for (size_t t = lo; t < hi; ++t) std::copy(tokens[t].begin(), tokens[t].end(), a.tokens.begin() + at[t]);
      return true;
    });
    a.is_float = std::any_of(floats.begin(), floats.end(), [](char f) { return f != 0; });
    a.shape.assign(1, static_cast<int64_t>(at[shares]));
    p_ = close + 1;
    return true;
  }

  // p_ just after the '[' of an array at nesting level k of nd
  bool level(Lifted& a, int k, int nd) {
    int64_t n = 0;
    for (;; ++n) {
      ws();
      if (k + 1 < nd) {
        if (p_ >= end_ || *p_ != '[') return false;
        ++p_;
        if (!level(a, k + 1, nd)) return false;
      } else if (!element(a)) {
        return false;  // also an empty array: np.asarray's shape and dtype for those are left to it
      }
      ws();
      if (p_ >= end_) return false;
      if (*p_ == ',') { ++p_; continue; }
      if (*p_ != ']') return false;
      ++p_;
      ++n;
      break;
    }
    if (a.shape[k] < 0) a.shape[k] = n;
    return a.shape[k] == n;
  }

  bool element(Lifted& a) {
    const char* b = p_;
    bool integral;
    if (!number(integral)) return false;
    a.tokens.push_back(static_cast<uint64_t>(b - s_) | (integral ? kIntegral : 0));
    a.is_float |= !integral;
    return true;
  }
};

// The numbers' values, as np.asarray would make them; false leaves the array to
// the Python path: an integer past int64 (numpy's choices there are its own) or a
// number out of double range (pydantic-core makes inf or 0 of 1e400, 1e-400).
bool convert(Lifted& a, const char* s, const char* end, size_t grain) {
  const size_t n = a.tokens.size();
  const uint64_t* tok = a.tokens.data();
  bool ok;
  if (!a.is_float) {
    a.ints.resize(n);
    int64_t* out = a.ints.data();
    ok = parallel(n, grain, [&](size_t lo, size_t hi) {
      for (size_t i = lo; i < hi; ++i) {
        if (std::from_chars(s + (tok[i] & ~kIntegral), end, out[i]).ec != std::errc()) return false;
      }
      return true;
    });
  } else {
    a.floats.resize(n);
    double* out = a.floats.data();
    ok = parallel(n, grain, [&](size_t lo, size_t hi) {
      for (size_t i = lo; i < hi; ++i) {
        const char* b = s + (tok[i] & ~kIntegral);
        if (tok[i] & kIntegral) {
          int64_t v;
          if (std::from_chars(b, end, v).ec != std::errc()) return false;
          out[i] = static_cast<double>(v);  // rounded to nearest, as Python's float(int)
        } else if (std::from_chars(b, end, out[i]).ec != std::errc()) {
          return false;
        }
      }
      return true;
    });
  }
  std::vector<uint64_t>().swap(a.tokens);
  return ok;
}

template <class T>
py::array owned_array(std::vector<T>&& values, const std::vector<int64_t>& shape) {
  auto* heap = new std::vector<T>(std::move(values));
  py::capsule owner(heap, [](void* v) { delete static_cast<std::vector<T>*>(v); });
  std::vector<py::ssize_t> dims(shape.begin(), shape.end());
  return py::array_t<T>(dims, heap->data(), owner);
}

py::object lift(const py::bytes& header, size_t grain) {
  char* data;
  py::ssize_t size;
  if (PyBytes_AsStringAndSize(header.ptr(), &data, &size) != 0) throw py::error_already_set();
  std::vector<Lifted> found;
  bool ok;
  {
    py::gil_scoped_release unlocked;  // bytes are immutable, and the caller holds a reference
    ok = Scanner(data, static_cast<size_t>(size), grain).run(found);
    if (ok) {  // numbers are read only once the whole body is known to be one we understand
      std::vector<Lifted> kept;
      for (Lifted& a : found) {
        if (convert(a, data, data + size, grain)) kept.push_back(std::move(a));
      }
      found.swap(kept);
    }
  }
  if (!ok || found.empty()) return py::none();
  std::string small;
  size_t at = 0;
  py::list arrays;
  for (Lifted& a : found) {
    small.append(data + at, a.begin - at).append("null");
    at = a.end;
    py::array arr = a.is_float ? owned_array(std::move(a.floats), a.shape) : owned_array(std::move(a.ints), a.shape);
    arrays.append(py::make_tuple(a.input, arr));
  }
  small.append(data + at, static_cast<size_t>(size) - at);
  return py::make_tuple(py::bytes(small), arrays);
}

// Shortest text that reads back to the same value; ".0" on integral values so that
// they read back as floats, as Python's repr (and the old pydantic-core output) wrote them.
template <class F>
char* put_float(char* o, F v) {
  if (std::isnan(v)) return static_cast<char*>(std::memcpy(o, "NaN", 3)) + 3;
  if (std::isinf(v)) return v < 0 ? static_cast<char*>(std::memcpy(o, "-Infinity", 9)) + 9
                                  : static_cast<char*>(std::memcpy(o, "Infinity", 8)) + 8;
  char* e = std::to_chars(o, o + 32, v).ptr;
  for (char* q = o; q < e; ++q) {
    if (*q == '.' || *q == 'e') return e;
  }
  *e++ = '.';
  *e++ = '0';
  return e;
}

template <class T>
char* put_all(char* o, const char* raw, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (i) *o++ = ',';
    if constexpr (std::is_same_v<T, bool>) {  // read as a byte: any nonzero byte is true, as torch reads it
      o = raw[i] ? static_cast<char*>(std::memcpy(o, "true", 4)) + 4 : static_cast<char*>(std::memcpy(o, "false", 5)) + 5;
    } else {
      T v;
      std::memcpy(&v, raw + i * sizeof(T), sizeof(T));
      if constexpr (std::is_floating_point_v<T>) {
        o = put_float(o, v);
      } else {
        o = std::to_chars(o, o + 24, v).ptr;
      }
    }
  }
  return o;
}

// kind: the struct module's letter for the element type ('?' bool, 'f' float32, ...)
py::bytes dump(const py::buffer& values, char kind, size_t grain) {
  py::buffer_info info = values.request();
  const size_t bytes = static_cast<size_t>(info.size * info.itemsize);
  size_t width;
  switch (kind) {
    case '?': case 'b': case 'B': width = 1; break;
    case 'h': case 'H': width = 2; break;
    case 'i': case 'I': case 'f': width = 4; break;
    case 'q': case 'Q': case 'd': width = 8; break;
    default: throw py::value_error(std::string("dump: unknown element kind ") + kind);
  }
  if (bytes % width != 0) throw py::value_error("dump: the buffer is not a whole number of elements");
  const size_t n = bytes / width;
  // per value at most 24 characters ("-2.2250738585072014e-308") and a comma; one more per thread's share
  constexpr size_t kSlot = 26;
  PyObject* out = PyBytes_FromStringAndSize(nullptr, static_cast<py::ssize_t>(2 + n * kSlot + 8));
  if (out == nullptr) throw py::error_already_set();
  char* const o = PyBytes_AS_STRING(out);
  const char* raw = static_cast<const char*>(info.ptr);
  char* e = o;
  {
    py::gil_scoped_release unlocked;  // out is ours alone until returned
    auto print = [&](char* w, size_t lo, size_t hi) {
      const char* r = raw + lo * width;
      switch (kind) {
        case '?': return put_all<bool>(w, r, hi - lo);
        case 'b': return put_all<int8_t>(w, r, hi - lo);
        case 'B': return put_all<uint8_t>(w, r, hi - lo);
        case 'h': return put_all<int16_t>(w, r, hi - lo);
        case 'H': return put_all<uint16_t>(w, r, hi - lo);
        case 'i': return put_all<int32_t>(w, r, hi - lo);
        case 'I': return put_all<uint32_t>(w, r, hi - lo);
        case 'q': return put_all<int64_t>(w, r, hi - lo);
        case 'Q': return put_all<uint64_t>(w, r, hi - lo);
        case 'f': return put_all<float>(w, r, hi - lo);
        default: return put_all<double>(w, r, hi - lo);
      }
    };
    // each share prints into its own worst-case slots, then the shares move down to close the gaps
    std::vector<std::pair<char*, char*>> shares;
    std::mutex m;
    parallel(n, grain, [&](size_t lo, size_t hi) {
      char* w = o + 1 + lo * kSlot + (lo ? 1 : 0);
      char* end = print(w, lo, hi);
      std::lock_guard<std::mutex> lock(m);
      shares.emplace_back(w, end);
      return true;
    });
    std::sort(shares.begin(), shares.end());
    *e++ = '[';
    for (size_t k = 0; k < shares.size(); ++k) {
      if (k) *e++ = ',';
      size_t len = static_cast<size_t>(shares[k].second - shares[k].first);
      if (shares[k].first != e) std::memmove(e, shares[k].first, len);
      e += len;
    }
    *e++ = ']';
  }
  if (_PyBytes_Resize(&out, e - o) != 0) throw py::error_already_set();
  return py::reinterpret_steal<py::bytes>(out);
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "JSON number arrays for the v2 inference protocol: lift them out of requests, print them into responses";
  // grain: the fewest values a thread takes on (tests pass 1 to split small arrays)
  m.def("lift", &lift, py::arg("header"), py::arg("grain") = 1 << 16);
  m.def("dump", &dump, py::arg("values"), py::arg("kind"), py::arg("grain") = 1 << 16);
}
