// Saving and loading NumPy's .npy and .npz files, so data moves to and from Python.
#pragma once

#include <map>
#include <string>

#include "jx/array.h"

namespace jx {

// Writes one array as .npy (format 1.0, little-endian, C order). bfloat16 is written as
// NumPy's void "|V2" would lose its meaning, so it raises; convert it first.
void save(const std::string& path, const Array& a);
// Reads a .npy file: any of jx's dtypes, either byte order, C or Fortran order.
// Malformed or unsupported files raise jx::Error naming the path and the problem.
Array load(const std::string& path);

// .npz: a zip of .npy members named "<key>.npy". savez stores them uncompressed,
// savez_compressed deflates them; load_npz reads both.
void savez(const std::string& path, const std::map<std::string, Array>& arrays);
void savez_compressed(const std::string& path, const std::map<std::string, Array>& arrays);
std::map<std::string, Array> load_npz(const std::string& path);

// In-memory forms, for tests and for sending arrays over other channels.
std::string to_npy_bytes(const Array& a);
Array from_npy_bytes(const std::string& bytes, const std::string& what = "<bytes>");

}  // namespace jx
