#include <jx/jx.h>

#include <iostream>

int main() {
  jx::Array x({1.0, 2.0, 3.0, 4.0});
  float total = 0;
  for (float v : x.to_vector<float>()) total += v;
  std::cout << "consumer ok: " << total << "\n";
  return 0;
}
