// CompileOptions::dump_dir (config's dump_dir, JX_DUMP=<dir>): what the compiler writes for a newcomer to read. One directory per
// compiled program, <dir>/<name>.<n>/, holding
//   00-traced.txt, 01-<pass>.txt, ...   the program after each pass that changed it
//   fusion.txt                          every fusion decision, merged or refused, with its reason
//   <kernel>.ll, <kernel>.s             each kernel's optimized LLVM IR and assembly
#pragma once

#include <string>
#include <string_view>

namespace jx::compiler {

class Dump {
 public:
  // Writes under `dir`; disabled when `dir` is empty.
  explicit Dump(std::string_view program_name, std::string dir = {});
  bool enabled() const { return !dir_.empty(); }
  // The directory of this program's files ("" when disabled).
  const std::string& dir() const { return dir_; }
  // Writes dir()/file; raises jx::Error naming the path if it cannot.
  void write(std::string_view file, std::string_view text) const;

 private:
  std::string dir_;
};

}  // namespace jx::compiler
