// .npy/.npz reading and writing, checked against files NumPy wrote
// (scripts/fixtures/io.py) and by round trips; malformed input must raise jx::Error.
#include <unistd.h>

#include <complex>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "core/array_internal.h"
#include "jx/io.h"
#include "test_util.h"

namespace jx {
namespace {

const std::string kDir = std::string(JX_FIXTURES_DIR) + "/io/";

const std::filesystem::path& temp_dir() {
  // Removed when the test program exits.
  struct Dir {
    std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("jx_io_test_" + std::to_string(::getpid()));
    Dir() { std::filesystem::create_directories(path); }
    ~Dir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static const Dir dir;
  return dir.path;
}

std::string temp_path(const std::string& name) { return (temp_dir() / name).string(); }

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

void spit(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// The (2, 3) values pattern() in scripts/fixtures/io.py writes, as complex128 for comparison.
std::vector<complex128_t> expected_pattern(DType d) {
  std::vector<complex128_t> out;
  for (int i = 0; i < 6; ++i) {
    if (d == DType::Bool) out.emplace_back(i % 2 == 0 ? 1 : 0);
    else if (is_unsigned(d)) out.emplace_back(i * 7);
    else if (is_integer(d)) out.emplace_back(i - 2);
    else if (is_floating(d)) out.emplace_back((i - 2) * 1.5);
    else out.emplace_back((i - 2) * 1.5, i);
  }
  return out;
}

const std::vector<DType> kNumpyDTypes = {DType::Bool,    DType::Int8,    DType::Int16,     DType::Int32,
                                         DType::Int64,   DType::UInt8,   DType::UInt32,    DType::Float16,
                                         DType::Float32, DType::Float64, DType::Complex64, DType::Complex128};

// Bitwise equality of dtype, shape and elements.
::testing::AssertionResult identical(const Array& a, const Array& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape())
    return ::testing::AssertionFailure() << a.aval().str() << " vs " << b.aval().str();
  std::vector<char> x(static_cast<size_t>(a.nbytes())), y(static_cast<size_t>(b.nbytes()));
  a.copy_to(x.data(), a.dtype());
  b.copy_to(y.data(), b.dtype());
  if (x != y) return ::testing::AssertionFailure() << "element bytes differ";
  return ::testing::AssertionSuccess();
}

TEST(IoLoad, EveryDTypeLittleAndBigEndian) {
  for (DType d : kNumpyDTypes) {
    SCOPED_TRACE(std::string(dtype_name(d)));
    Array a = load(kDir + std::string(dtype_name(d)) + ".npy");
    EXPECT_EQ(a.dtype(), d);
    EXPECT_EQ(a.shape(), (Shape{2, 3}));
    EXPECT_EQ(a.to_vector<complex128_t>(), expected_pattern(d));
    if (itemsize(d) > 1) {
      EXPECT_TRUE(identical(load(kDir + std::string(dtype_name(d)) + "_be.npy"), a));
    }
  }
}

TEST(IoLoad, FortranOrderIsTransposedIntoCOrder) {
  Array f = load(kDir + "fortran_f32.npy");
  EXPECT_EQ(f.shape(), (Shape{2, 3, 4}));
  std::vector<float> want(24);
  for (int i = 0; i < 24; ++i) want[static_cast<size_t>(i)] = static_cast<float>(i);
  EXPECT_EQ(f.to_vector<float>(), want);
  EXPECT_TRUE(detail::is_contiguous(f));
  Array g = load(kDir + "fortran_i64_be.npy");
  EXPECT_EQ(g.dtype(), DType::Int64);
  EXPECT_EQ(g.to_vector<int64_t>(), (std::vector<int64_t>{0, -3, -6, -9, -12, -15}));
}

TEST(IoLoad, ZeroDimAndEmpty) {
  Array s = load(kDir + "scalar_f64.npy");
  EXPECT_EQ(s.shape(), Shape{});
  EXPECT_EQ(s.dtype(), DType::Float64);
  EXPECT_EQ(s.item<double>(), 3.5);
  EXPECT_TRUE(load(kDir + "scalar_bool.npy").item<bool>());
  Array e = load(kDir + "empty_i32.npy");
  EXPECT_EQ(e.shape(), (Shape{0, 3}));
  EXPECT_EQ(e.dtype(), DType::Int32);
  EXPECT_EQ(load(kDir + "empty_f32.npy").shape(), (Shape{0}));
}

TEST(IoLoad, FormatVersions2And3) {
  EXPECT_EQ(load(kDir + "v2_f32.npy").to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4}));
  Array v3 = load(kDir + "v3_i16.npy");
  EXPECT_EQ(v3.dtype(), DType::Int16);
  EXPECT_EQ(v3.to_vector<int>(), (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(IoLoad, UnsupportedDTypesNameTheProblem) {
  EXPECT_JX_ERROR(load(kDir + "uint16.npy"), "[load]", "uint16.npy", "'<u2'", "not supported");
  EXPECT_JX_ERROR(load(kDir + "structured.npy"), "[load]", "structured.npy", "structured");
}

TEST(IoLoad, MissingFile) {
  EXPECT_JX_ERROR(load(kDir + "no_such_file.npy"), "[load]", "no_such_file.npy", "cannot open");
  EXPECT_JX_ERROR(load_npz(kDir + "no_such_file.npz"), "[load_npz]", "no_such_file.npz", "cannot open");
  EXPECT_JX_ERROR(load(kDir), "[load]", "is a directory");
}

TEST(IoNpz, StoredAndCompressedFromNumpy) {
  for (const char* name : {"stored.npz", "compressed.npz"}) {
    SCOPED_TRACE(name);
    auto m = load_npz(kDir + name);
    ASSERT_EQ(m.size(), 4u);
    EXPECT_EQ(m.at("a").dtype(), DType::Float32);
    EXPECT_EQ(m.at("a").to_vector<complex128_t>(), expected_pattern(DType::Float32));
    EXPECT_EQ(m.at("b").shape(), Shape{});
    EXPECT_EQ(m.at("b").item<int64_t>(), 7);
    EXPECT_EQ(m.at("c").shape(), (Shape{0, 2}));
    EXPECT_EQ(m.at("c").dtype(), DType::Bool);
    EXPECT_EQ(m.at("d").dtype(), DType::Complex128);
    EXPECT_EQ(m.at("d").to_vector<complex128_t>(), expected_pattern(DType::Complex128));
  }
}

TEST(IoNpz, RoundTripStoredAndCompressed) {
  std::map<std::string, Array> arrays;
  for (DType d : kNumpyDTypes) arrays[std::string(dtype_name(d))] = load(kDir + std::string(dtype_name(d)) + ".npy");
  arrays["empty"] = load(kDir + "empty_i32.npy");
  arrays["scalar"] = Array(2.5);
  // 4000 zeros compress well, so deflate really shrinks the member.
  arrays["zeros"] = Array(std::vector<float>(4000, 0.0f));
  for (bool compress : {false, true}) {
    std::string path = temp_path(compress ? "rt_compressed.npz" : "rt_stored.npz");
    compress ? savez_compressed(path, arrays) : savez(path, arrays);
    auto back = load_npz(path);
    ASSERT_EQ(back.size(), arrays.size());
    for (const auto& [k, v] : arrays) EXPECT_TRUE(identical(back.at(k), v)) << k;
    if (compress) {
      EXPECT_LT(slurp(path).size(), 8000u);
    }
  }
}

TEST(IoNpy, RoundTripEveryDTypeAndLayout) {
  for (DType d : kNumpyDTypes) {
    Array a = load(kDir + std::string(dtype_name(d)) + ".npy");
    EXPECT_TRUE(identical(from_npy_bytes(to_npy_bytes(a)), a)) << dtype_name(d);
  }
  // A transposed view (non-contiguous) is written in its logical C order.
  Array base = load(kDir + "int32.npy");
  Array t = detail::make_view(base, Aval{{3, 2}, DType::Int32, false}, {1, 3}, 0);
  Array back = from_npy_bytes(to_npy_bytes(t));
  EXPECT_EQ(back.shape(), (Shape{3, 2}));
  EXPECT_EQ(back.to_vector<int>(), (std::vector<int>{-2, 1, -1, 2, 0, 3}));
  // A broadcast (stride 0) view.
  Array b = detail::make_view(base, Aval{{2, 2}, DType::Int32, false}, {0, 1}, 1);
  EXPECT_EQ(from_npy_bytes(to_npy_bytes(b)).to_vector<int>(), (std::vector<int>{-1, 0, -1, 0}));
  // 0-d and size-0.
  EXPECT_TRUE(identical(from_npy_bytes(to_npy_bytes(Array(1.25f))), detail::scalar<float>(1.25f)));
  Array e = load(kDir + "empty_i32.npy");
  EXPECT_TRUE(identical(from_npy_bytes(to_npy_bytes(e)), e));
}

TEST(IoNpy, WritesNumpysExactBytes) {
  // NumPy's header layout: same bytes as np.save for the same array.
  for (const char* name : {"float32.npy", "complex128.npy", "bool.npy", "scalar_f64.npy", "empty_i32.npy"}) {
    std::string numpy_bytes = slurp(kDir + name);
    EXPECT_EQ(to_npy_bytes(from_npy_bytes(numpy_bytes)), numpy_bytes) << name;
  }
  std::string path = temp_path("saved.npy");
  save(path, load(kDir + "float64.npy"));
  EXPECT_EQ(slurp(path), slurp(kDir + "float64.npy"));
  EXPECT_EQ(to_npy_bytes(Array(1.0f)).size() % 64, 4u);  // header padded to 64, then 4 data bytes
}

TEST(IoNpy, SaveErrors) {
  Array bf = detail::scalar<bfloat16_t>(bfloat16_t(1.0f));
  EXPECT_JX_ERROR(save(temp_path("bf.npy"), bf), "[save]", "bf.npy", "bfloat16 has no NumPy dtype");
  EXPECT_JX_ERROR(to_npy_bytes(bf), "[to_npy_bytes]", "bfloat16");
  EXPECT_JX_ERROR(to_npy_bytes(Array()), "[to_npy_bytes]", "null");
  EXPECT_JX_ERROR(savez(temp_path("bf.npz"), {{"w", bf}}), "[savez]", "array 'w'", "bf.npz", "bfloat16");
  EXPECT_JX_ERROR(save("/nonexistent_dir_jx/x.npy", Array(1.0f)), "[save]", "/nonexistent_dir_jx/x.npy",
                  "cannot open file for writing");
}

// A valid file with its header replaced by `header` (re-padded, v1.0 length field).
std::string with_header(const std::string& header, const std::string& data) {
  std::string h = header;
  while ((10 + h.size() + 1) % 64) h += ' ';
  h += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(h.size() & 0xff);
  out += static_cast<char>(h.size() >> 8);
  return out + h + data;
}

TEST(IoNpy, MalformedInputNamesThePathAndProblem) {
  std::string good = slurp(kDir + "float32.npy");
  const std::string four(4, '\0');
  struct Case {
    std::string bytes;
    std::vector<const char*> expect;
  };
  std::vector<Case> cases = {
      {"", {"bad magic"}},
      {"PK\x03\x04 not npy at all", {"bad magic"}},
      {good.substr(0, 9), {"bad magic"}},  // too short for a prelude
      {good.substr(0, 40), {"truncated header"}},
      {good.substr(0, good.size() - 1), {"truncated data", "needs 24 bytes, file has 23"}},
      {good + "x", {"size mismatch", "needs 24 bytes, file has 25"}},
      {std::string("\x93NUMPY\x04\x00", 8) + good.substr(8), {"unsupported .npy format version 4.0"}},
      {with_header("{'descr': '<f3', 'fortran_order': False, 'shape': (1,), }", four), {"'<f3'", "unknown"}},
      {with_header("{'descr': '<V2', 'fortran_order': False, 'shape': (2,), }", four), {"void dtype"}},
      {with_header("{'descr': '<f4', 'fortran_order': False, }", four), {"missing key 'shape'"}},
      {with_header("{'descr': '<f4', 'fortran_order': 0, 'shape': (1,), }", four), {"fortran_order"}},
      {with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", four), {"bad header dict"}},
      {with_header("{'descr': '<f4', 'fortran_order': False, 'shape': [1], }", four), {"'shape' must be a tuple"}},
      {with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", four), {"exactly the keys"}},
      {with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)", four), {"bad header dict"}},
      {with_header("{'descr: '<f4'}", four), {"bad header dict"}},
      {with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", four),
       {"integer too large"}},
      {with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 16), }", four),
       {"truncated data", "too many"}},
      {with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", four),
       {"truncated data", "shape (2, 3) of <f4 needs 24 bytes, file has 4"}},
  };
  for (const Case& c : cases) {
    try {
      from_npy_bytes(c.bytes, "case.npy");
      ADD_FAILURE() << "no error for a case expecting " << c.expect[0];
    } catch (const Error& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find("[from_npy_bytes] case.npy: "), std::string::npos) << msg;
      for (const char* sub : c.expect) EXPECT_NE(msg.find(sub), std::string::npos) << msg << " lacks " << sub;
    }
  }
  // The path appears when loading from a file.
  std::string path = temp_path("bad.npy");
  spit(path, "garbage");
  EXPECT_JX_ERROR(load(path), "[load]", "bad.npy", "bad magic");
}

TEST(IoNpy, BoolBytesAreNormalized) {
  std::string bytes = with_header("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", std::string("\x00\x02\xff", 3));
  Array b = from_npy_bytes(bytes);
  EXPECT_EQ(b.to_vector<int>(), (std::vector<int>{0, 1, 1}));
}

TEST(IoNpz, MalformedArchives) {
  std::string good = slurp(kDir + "compressed.npz");
  std::string stored = slurp(kDir + "stored.npz");
  std::string path = temp_path("bad.npz");
  auto expect_error = [&](const std::string& bytes, const char* sub) {
    spit(path, bytes);
    EXPECT_JX_ERROR(load_npz(path), "[load_npz]", "bad.npz", sub);
  };
  expect_error("", "too small");
  expect_error(std::string(100, 'x'), "no end-of-central-directory");
  expect_error(good.substr(0, good.size() / 2), "no end-of-central-directory");
  expect_error(good.substr(good.size() / 2), "corrupt zip archive");
  // Flip a byte of the first member's deflate stream or stored data: CRC or inflate fails.
  std::string flipped = good;
  flipped[60] = static_cast<char>(flipped[60] ^ 0x55);
  expect_error(flipped, "corrupt zip archive");
  std::string stored_flipped = stored;
  stored_flipped[stored_flipped.find("NUMPY") + 20] ^= 0x01;
  expect_error(stored_flipped, "CRC mismatch in member 'a.npy'");
  spit(path, stored);
  EXPECT_NO_THROW(load_npz(path));
}

TEST(IoFuzz, RandomCorruptionsRaiseOrLoad) {
  // Every corrupted input must either load or raise jx::Error: never crash (the suite
  // also runs under ASan/UBSan).
  std::mt19937 rng(12345);
  std::vector<std::string> seeds = {slurp(kDir + "float32.npy"), slurp(kDir + "fortran_i64_be.npy"),
                                    slurp(kDir + "complex128_be.npy")};
  std::vector<std::string> zips = {slurp(kDir + "stored.npz"), slurp(kDir + "compressed.npz")};
  auto corrupt = [&](std::string s) {
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !s.empty(); ++e) {
      size_t at = rng() % s.size();
      switch (rng() % 5) {
        case 0: s[at] = static_cast<char>(rng()); break;
        case 1: s[at] = static_cast<char>(s[at] ^ (1 << (rng() % 8))); break;
        case 2: s.resize(at); break;
        case 3: s.insert(at, 1, static_cast<char>(rng())); break;
        case 4: s.erase(at, 1 + rng() % 8); break;
      }
    }
    return s;
  };
  int loaded = 0, raised = 0;
  for (int i = 0; i < 400; ++i) {
    std::string bad = corrupt(seeds[static_cast<size_t>(i) % seeds.size()]);
    try {
      Array a = from_npy_bytes(bad, "fuzz.npy");
      (void)a.to_vector<complex128_t>();
      ++loaded;
    } catch (const Error&) {
      ++raised;
    }
  }
  std::string path = temp_path("fuzz.npz");
  for (int i = 0; i < 200; ++i) {
    spit(path, corrupt(zips[static_cast<size_t>(i) % zips.size()]));
    try {
      auto m = load_npz(path);
      ++loaded;
    } catch (const Error&) {
      ++raised;
    }
  }
  EXPECT_EQ(loaded + raised, 600);
  EXPECT_GT(raised, 300);
}

}  // namespace
}  // namespace jx
