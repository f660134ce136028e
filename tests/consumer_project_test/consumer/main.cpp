#include <jx/jx.h>

#include <iostream>

namespace jnp = jx::numpy;

int main() {
  jx::Array x({1.0, 2.0, 3.0, 4.0});
  float total = 0;
  for (float v : x.to_vector<float>()) total += v;
  // A sort loads the vqsort module installed beside libjx.
  std::cout << "consumer ok: " << total << ", sorted";
  for (float v : jnp::sort(jx::Array({3.0, 1.0, 4.0, 2.0})).to_vector<float>()) std::cout << " " << v;
  std::cout << "\n";
  return 0;
}
